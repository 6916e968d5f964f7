#!/bin/sh
# A user's install, checked as a user would meet it: a fresh virtual environment,
# `pip install '.[cpu]'` (not editable, no dev or bench extras) from a copy of this tree,
# then `lsp-copilot doctor --json` and `lsp-copilot context` on a file, run from outside
# the tree so that nothing (grammars above all) can come from the clone. A second run is
# quick: pip's cache has the wheels.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
EXTRA=${EXTRA:-cpu}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lsp-copilot-user-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
mkdir "$WORK/src"
(cd "$ROOT" && tar --exclude=./.venv --exclude=./.git --exclude=node_modules \
    --exclude=./build --exclude='*.egg-info' --exclude=./bench-results -cf - .) |
    (cd "$WORK/src" && tar -xf -)
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q "$WORK/src[$EXTRA]"
if [ "$EXTRA" = cpu ]; then  # as scripts/install.sh and the README say
    "$WORK/venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
fi
if "$WORK/venv/bin/python" -m pip show -q pytest >/dev/null 2>&1; then
    echo "FAIL: the user install pulled in the dev tools" >&2; exit 1
fi
cd "$WORK"
export LSP_COPILOT_LOG_FILE="$WORK/lsp-copilot.log"
printf 'import math\n\n\nclass Circle:\n    def __init__(self, radius):\n        self.radius = radius\n\n    def area(self):\n        return \n' > sample.py
# doctor exits 1 when the default model is not prepared yet: that is not this check's business.
"$WORK/venv/bin/lsp-copilot" doctor --json > doctor.json 2> doctor.err || true
"$WORK/venv/bin/lsp-copilot" context sample.py:9:16 --json > context.json 2> context.err
"$WORK/venv/bin/python" - "$WORK" <<'PY'
import json, sys
from pathlib import Path

work = Path(sys.argv[1])
problems = []
doctor = json.loads((work / "doctor.json").read_text())
checks = {c["name"]: c for c in doctor["checks"]}
for name in ("python", "engine (vLLM)", "device", "grammars", "grammar queries", "log"):
    if not checks.get(name, {}).get("ok"):
        problems.append(f"doctor: {name}: {checks.get(name)}")
queries = checks.get("grammar queries", {}).get("detail", "")
if str(work / "venv") not in queries:
    problems.append(f"grammar queries not from the installed data files: {queries}")
context = json.loads((work / "context.json").read_text())
if context.get("language") != "python" or context.get("mode") == "none" or not context["prompt"]:
    problems.append(f"context: {dict((k, context.get(k)) for k in ('language', 'mode'))}")
if "class Circle" not in context["prompt"]:
    problems.append("context: the prompt misses the enclosing class")
for name in ("doctor.err", "context.err"):
    if (work / name).read_text().strip():
        problems.append(f"{name[:-4]} wrote to stderr: {(work / name).read_text()[:500]}")
if problems:
    print("FAIL user install:\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"user install OK: {queries}; context {context['mode']}, "
      f"{context['prompt_tokens']} prompt tokens")
PY
"$WORK/venv/bin/python" -c "import vllm" 2>/dev/null || {
    echo "FAIL: import vllm fails in the user install" >&2; exit 1; }
echo "import vllm OK"
