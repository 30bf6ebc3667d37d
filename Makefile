# cuzk: every target sets up what it needs (a .venv with the package, the npm tools).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
TOOLS  := .tools
export NUMBA_CACHE_DIR ?= $(CURDIR)/.cache/numba

.PHONY: install tools test lint bench bench-full bench-gpu demo clean

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip setuptools wheel
	$(VENV)/bin/pip install --quiet -e '.[test,bench]'
	touch $@

install: $(VENV)/.installed

# snarkjs and circom2 from the npm registry, for the interop tests and benchmarks.
$(TOOLS)/.installed: tools/package.json
	mkdir -p $(TOOLS)
	cp tools/package.json $(TOOLS)/package.json
	cd $(TOOLS) && npm install --no-audit --no-fund --loglevel=error
	touch $@

tools: $(TOOLS)/.installed

test: install tools
	$(PY) -m pytest -q -p no:cacheprovider tests

lint: install
	$(VENV)/bin/ruff check cuzk tests bench

bench: install tools
	$(PY) -m bench --profile quick

bench-full: install tools
	$(PY) -m bench --profile full

bench-gpu: install tools
	$(PY) -m bench --profile gpu

demo: install tools
	$(PY) -m cuzk.demo

clean:
	rm -rf $(VENV) $(TOOLS) .cache build *.egg-info
