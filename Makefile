# The two README commands: `make demo` and `make test`. Both install what they need.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint clean

$(STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) VENV=$(VENV) ./scripts/install.sh
	touch $(STAMP)

install: $(STAMP)

# A real completion from the real default model (SmolLM2-135M, prepared on first run).
demo: install
	$(BIN)/lsp-copilot model prepare
	$(BIN)/lsp-copilot complete tests/fixtures/demo/geometry.py:13:12 --json

lint: install
	$(BIN)/ruff check lsp_copilot tests
	$(BIN)/mypy

test: install lint
	$(BIN)/lsp-copilot model prepare
	$(BIN)/pytest -q -p no:cacheprovider tests

clean:
	rm -rf $(VENV)
