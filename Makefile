# mzattn — fresh-clone entry points.  `make demo` and `make test` set up .venv
# themselves; everything else assumes it exists.  `make setup` installs every
# extra (all) and the dev tools; `pip install mzattn` alone is the light core.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/mzattn-repro demo

lint: setup
	$(BIN)/ruff check .

test: lint
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/mzattn-repro bench --readme docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
