# Two entry points for a fresh machine with Python 3.11:
#   make demo  -- set up .venv and run the main job
#   make test  -- set up .venv and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench docs docs-check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/energyopt demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff check energyopt tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/pem_exact.py
	$(BIN)/python benchmarks/pem_crawl.py --quick
	$(BIN)/python benchmarks/powercap_gap.py --events 20
	$(BIN)/python benchmarks/tuning_replay.py --seeds 10

# Executed copies of the notebooks (with outputs) in docs/notebooks/.
docs: $(STAMP)
	$(BIN)/python benchmarks/execute_notebooks.py --out docs/notebooks

# Rerun the quick benchmarks behind the figures quoted in docs/ and fail on drift
# (figure blocks tagged <!-- docs-check: COMMAND -->; see benchmarks/docs_check.py).
docs-check: $(STAMP)
	$(BIN)/python benchmarks/docs_check.py docs/*.md

clean:
	rm -rf $(VENV) build *.egg-info
