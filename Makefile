# cuzk: every target sets up what it needs (a .venv with the package, the npm tools).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
TOOLS  := .tools
export NUMBA_CACHE_DIR ?= $(CURDIR)/.cache/numba

.PHONY: install tools system-deps test test-fast lint format bench bench-full bench-gpu soak demo clean

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip setuptools wheel
	# compat: the editable install is one plain path line in a .pth file; setuptools' default
	# is an import hook (a .pth that imports a finder module) that every Python start of the
	# venv runs: +7 ms to `import cuzk.groth16.remote` (15 ms), +2 ms beside numba-cuda's own
	# .pth hook (+15 ms). setuptools calls the mode transitional: where it is gone, the default
	# install
	$(VENV)/bin/pip install --quiet -e '.[test,bench]' --config-settings editable_mode=compat \
	  || $(VENV)/bin/pip install --quiet -e '.[test,bench]'
	$(VENV)/bin/python -m compileall -q cuzk  # bytecode, as a regular install writes it
	touch $@

install: $(VENV)/.installed

# snarkjs, circom2, circomlib and circomlibjs from npm, for the interop tests and benchmarks
# (a changed tools/package.json installs again).
$(TOOLS)/.installed: tools/package.json
	mkdir -p $(TOOLS)
	cp tools/package.json $(TOOLS)/package.json
	cd $(TOOLS) && npm install --no-audit --no-fund --loglevel=error
	touch $@

tools: $(TOOLS)/.installed

# Debian packages the tests drive: tmux (a real `cuzk top` run) and headless Chromium with its
# driver (the web panel); GNU time for the prove benchmark's peak-RSS figures; iproute2's `ip`
# (the cluster tests bring up loopback in a network namespace of their own). Installed when
# missing, if this is a root shell with apt-get; otherwise the tests that need them skip with
# the reason.
SYSTEM_BINARIES := tmux chromium chromedriver /usr/bin/time ip
system-deps:
	@missing=""; for b in $(SYSTEM_BINARIES); do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages for:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux chromium chromium-driver time iproute2 >/dev/null; \
	  else echo "note: missing$$missing (not root or no apt-get): tests needing them will skip"; fi; \
	fi

test: install tools system-deps
	$(PY) -m pytest -q -p no:cacheprovider tests

# The quick loop: every test not marked slow (over ~10 s) or interop (runs snarkjs, circom2 or
# node), in a few minutes.
test-fast: install system-deps
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow and not interop" tests

# Lint and layout, checked (`make format` applies the layout).
LINTED := cuzk tests bench examples build_support setup.py
lint: install
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

format: install
	$(VENV)/bin/ruff format $(LINTED)

# Suites by name: `make bench SUITES="msm ntt"` (`.venv/bin/python -m bench --list` names them).
BENCH_SUITES = $(foreach s,$(SUITES),--suite $(s))

bench: install tools system-deps
	$(PY) -m bench --profile quick $(BENCH_SUITES)

bench-full: install tools system-deps
	$(PY) -m bench --profile full $(BENCH_SUITES)

bench-gpu: install tools
	$(PY) -m bench --profile gpu $(BENCH_SUITES)

# The soak (bench/bench_soak.py): `cuzk serve` for 30 minutes under mixed work, SIGKILLs of its
# workers and bad clients; fails when a job is lost or duplicated, a proof is invalid, or a
# resource grows after warm-up. CUZK_SOAK_SECONDS=N sets another length.
soak: install
	$(PY) -m bench --profile full --suite soak

demo: install tools
	$(PY) examples/demo.py

clean:
	rm -rf $(VENV) $(TOOLS) .cache build *.egg-info
