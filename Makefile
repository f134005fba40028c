# Everything the project needs installs from here (into a local virtualenv).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
GRAPH ?= ws:100000:20:0.5
SEED ?= 1

.PHONY: install demo test test-fast lint docs clean

# editable_mode=compat puts the checkout itself on sys.path (a .pth file), so `import g2pl` finds this
# package even from the folder above a checkout named g2pl/ (which would otherwise be imported as an
# empty namespace package: setuptools' default editable import hook comes after sys.path).
$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,mpi,notebook]' --config-settings editable_mode=compat
	touch $@

install: $(VENV)/.installed

# The main job: greedy maximal matching (the main paper's Fig. 4) on a generated graph.
demo: install
	@mkdir -p out
	$(BIN)/g2pl run programs/matching.g2pl --graph $(GRAPH) --seed $(SEED) --show-plan \
		--output out/matching.json --stats out/matching-stats.json
	@echo "wrote out/matching.json and out/matching-stats.json"

# Every test (tests/README.md says which folder holds what): about 15 minutes on 2 cores.
test: install
	$(BIN)/python -m pytest

# The quick part (about 3 minutes on 2 cores): the compiler, programs on one rank, graphs, API, CLI and the
# runtime's kernels; not MPI, the fuzzer, security, the compiler's limits, the type check or the bench scripts.
test-fast: install
	$(BIN)/python -m pytest tests/compiler tests/programs/test_programs.py tests/programs/test_language_examples.py \
		tests/graph tests/api tests/cli tests/runtime/test_kernels.py tests/runtime/test_runtime_seam.py \
		tests/runtime/test_backend_protocol.py \
		--ignore=tests/compiler/test_fuzz.py --ignore=tests/compiler/test_compiler_limits.py \
		--ignore=tests/compiler/test_compiler_scaling.py

lint: install
	$(BIN)/ruff check g2pl tests bench

# docs/cli.md is generated from the argument parsers (tests/cli/test_ux.py checks it is current).
docs: install
	$(BIN)/python -c 'import sys; from g2pl.cli import cli_reference; sys.stdout.write(cli_reference())' > docs/cli.md

clean:
	rm -rf $(VENV) out build *.egg-info
