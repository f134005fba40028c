# Everything the project needs installs from here (into a local virtualenv).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
GRAPH ?= ws:100000:20:0.5
SEED ?= 1

.PHONY: install demo test lint docs clean

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,mpi,notebook]'
	touch $@

install: $(VENV)/.installed

# The main job: greedy maximal matching (the main paper's Fig. 4) on a generated graph.
demo: install
	@mkdir -p out
	$(BIN)/g2pl run programs/matching.g2pl --graph $(GRAPH) --seed $(SEED) --show-plan \
		--output out/matching.json --stats out/matching-stats.json
	@echo "wrote out/matching.json and out/matching-stats.json"

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check g2pl tests

# docs/cli.md is generated from the argument parsers (tests/test_ux.py checks it is current).
docs: install
	$(BIN)/python -c 'import sys; from g2pl.cli import cli_reference; sys.stdout.write(cli_reference())' > docs/cli.md

clean:
	rm -rf $(VENV) out build *.egg-info
