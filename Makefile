# mzattn — fresh-clone entry points.  `make demo` and `make test` set up .venv
# themselves; everything else assumes it exists.  `make setup` installs every
# extra (all) and the dev tools; `pip install .` alone is the light core.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint bench clean docker-test slurm-test gpu-check

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

test: lint  # one test process per core; tests/conftest.py gives each one torch thread
	$(BIN)/python -m pytest -q -n auto

# The image built and run on a real Docker engine (docker/engine_test.py; docs/docker.md).
# Root starts an engine when none runs; KEEP=1 keeps the images, results and engine.
docker-test: setup
	$(BIN)/python docker/engine_test.py

slurm-test: setup  # a single-node SLURM from Debian packages; see docs/clusters.md
	PYTHON=$(BIN)/python .ci/slurm-test

bench: setup
	$(BIN)/mzattn-repro bench --readme docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info

# The GPU check (docs/benchmarks.md): tests/cuda, the step profile, set_pooling, table30 and one
# cell on CUDA in under 8 minutes; OUT=folder (default bench/results), DEVICE=cpu for the CPU parts.
gpu-check:
	PYTHON=$(if $(wildcard $(BIN)/python),$(BIN)/python,python3) bash bench/gpu_check.sh $(or $(OUT),bench/results) $(or $(DEVICE),cuda)
