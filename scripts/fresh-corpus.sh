#!/bin/sh
# Code published after every model lsp-copilot ships (packages first released on PyPI in
# 2026), for `lsp-copilot bench quality|typing --corpus DIR`. Two corpora: tune on one,
# report on the other. Usage: scripts/fresh-corpus.sh DIR  ->  DIR/tune, DIR/heldout
set -eu
DIR=${1:?usage: scripts/fresh-corpus.sh DIR}
PY=${PY:-python3}
mkdir -p "$DIR/wheels" "$DIR/tune" "$DIR/heldout"
# Pinned, so that the corpus never moves. First releases: prime-tunnel 2026-02,
# oauth-cli-kit 2026-02, burner-redis 2026-04, langchain-protocol 2026-04,
# sage-ai-cli 2026-09 (tune); efterlev 2026-04 (held out). Wheels are pure Python;
# efterlev declares Python 3.12+, which only matters for installing it, not reading it.
"$PY" -m pip download -q --no-deps -d "$DIR/wheels" \
    prime-tunnel==0.1.15 oauth-cli-kit==0.1.6 burner-redis==0.1.7 \
    langchain-protocol==0.0.20 sage-ai-cli==0.1.0
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    -d "$DIR/wheels" efterlev==0.1.228
for whl in "$DIR"/wheels/*.whl; do
    case "$(basename "$whl")" in
        efterlev-*) dest="$DIR/heldout" ;;
        *) dest="$DIR/tune" ;;
    esac
    "$PY" -m zipfile -e "$whl" "$dest"
done
find "$DIR/tune" "$DIR/heldout" -name '*.dist-info' -type d -prune -exec rm -rf {} +
echo "tune: $(find "$DIR/tune" -name '*.py' | wc -l) files," \
     "heldout: $(find "$DIR/heldout" -name '*.py' | wc -l) files"
