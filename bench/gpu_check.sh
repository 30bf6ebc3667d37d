#!/usr/bin/env bash
# One prepared check of the CUDA path on a real GPU: the kernels' tests and the CUDA proving
# paths (tests/test_cuda_prove.py, Groth16; tests/test_plonk_cuda.py, PLONK) on the device,
# PLONK proofs by `cuzk prove --device cuda:0` checked by `cuzk verify`, then the GPU
# benchmark sizes. < 10 minutes.
#
#   on a machine with the package index, before going to the GPU (it may have no network):
#       bench/gpu_check.sh --wheels      # test-only packages a GPU image may lack -> .whl/
#   on a machine with a CUDA GPU, in the checkout with .whl/ copied beside it:
#       bash bench/gpu_check.sh          # results and the log under $OUT
#
# Set-up: a working .venv is used as it is; else `make install` is tried (it works where the
# package index can be reached); else (a machine that reaches nothing) an offline .venv whose
# bin/python runs the machine's own python3 (with numba, numba-cuda, numpy, click, pytest,
# hypothesis installed) with the carried wheels (py_ecc and its needs, multiprocess) and the
# checkout on PYTHONPATH.
# Output: $OUT/gpu_check.log (everything), $OUT/plonk/ (the PLONK proofs),
# $OUT/bench/{arith,ntt,msm}.gpu.json and
# partial.gpu.json (the run record). Exit status: the first failing step's (3: set-up,
# 4: no GPU, 124: a step timed out).
#
# Knobs (environment): TESTS_TIMEOUT (s, default 330), BENCH_TIMEOUT (s, default 200),
# PLONK_TIMEOUT (s per PLONK proof, default 180), PLONK_CIRCUITS (fixtures proved on cuda:0),
# INSTALL_TIMEOUT (s, default 240: how long `make install` may try before the offline set-up),
# PYVER (--wheels: the GPU machine's Python, default 3.12), BASE_PY (offline .venv's base,
# default python3), VENV (default .venv), GPU_CHECK_OFFLINE=1 (the offline set-up even where
# the index is reachable), GPU_CHECK_MODE=sim (a dry run of the set-up and tests in the CUDA
# simulator, bench skipped: for trying this script where no GPU is; ~85 s here).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-.venv}
case $VENV in /*) ;; *) VENV=$ROOT/$VENV ;; esac
PY=$VENV/bin/python
WHEELS=.whl
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$ROOT/.cache/numba}
export PYTHONUNBUFFERED=1

# test-only and engine packages a GPU machine's Python image may lack
WHEEL_SPECS=(py_ecc==8.0.0 multiprocess)

if [ "${1:-}" = "--wheels" ]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    mkdir -p "$WHEELS"
    exec python3 -m pip download -q --only-binary=:all: --python-version "${PYVER:-3.12}" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHEELS" "${WHEEL_SPECS[@]}"
fi

OUT=${OUT:-$ROOT/bench/work/gpu_check}
mkdir -p "$OUT"
MODE=${GPU_CHECK_MODE:-gpu}
step() { printf '\n=== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

venv_ok() {
    "$PY" -c 'import cuzk, numba.cuda, py_ecc, multiprocess, pytest, hypothesis' 2>/dev/null
}

offline_venv() {
    # $VENV/bin/python: a wrapper that runs BASE_PY with the carried wheels ($VENV/site) and
    # the checkout on PYTHONPATH. Not a venv made from BASE_PY: the image's python3 is itself
    # a venv, and a venv over it reaches its packages only through .pth tricks, under which
    # cuda.pathfinder no longer finds the NVIDIA libraries (libnvrtc) beside them.
    local base
    base=$(command -v "${BASE_PY:-python3}") || return 1
    rm -rf "$VENV"
    mkdir -p "$VENV/bin" "$VENV/site" || return 1
    if compgen -G "$WHEELS/*.whl" > /dev/null; then
        "$base" -m pip install -q --no-index --no-deps --no-compile --target "$VENV/site" \
            "$WHEELS"/*.whl || return 1
    fi
    cat > "$PY" <<WRAP || return 1
#!/bin/sh
export PYTHONPATH="$VENV/site:$ROOT\${PYTHONPATH:+:\$PYTHONPATH}"
exec "$base" "\$@"
WRAP
    chmod +x "$PY"
}

main() {
step "set-up"
if venv_ok; then
    echo "$VENV works as it is"
elif [ -z "${GPU_CHECK_OFFLINE:-}" ] && PIP_DEFAULT_TIMEOUT=20 PIP_RETRIES=1 \
        timeout "${INSTALL_TIMEOUT:-240}" make install VENV="$VENV" PYTHON=python3; then
    echo "make install: $VENV installed from the package index"
else
    echo "offline set-up (make install failed: no package index here, or GPU_CHECK_OFFLINE):" \
         "$VENV/bin/python runs ${BASE_PY:-python3} with $WHEELS/"
    offline_venv || { echo "gpu_check: could not build the offline $VENV"; exit 3; }
fi
if ! venv_ok; then
    "$PY" -c 'import cuzk, numba.cuda, py_ecc, multiprocess, pytest, hypothesis'
    echo "gpu_check: $VENV lacks a package above (no $WHEELS/? run bench/gpu_check.sh --wheels" \
         "here and carry .whl)"
    exit 3
fi
"$PY" -c 'import sys, importlib.metadata as m
print("python", sys.version.split()[0], *(f"| {d} {m.version(d)}" for d in
      ("numba", "numba-cuda", "llvmlite", "numpy", "py_ecc")))' 

if [ "$MODE" = gpu ]; then
    step "GPU"
    nvidia-smi -L || { echo "gpu_check: no GPU here (nvidia-smi -L failed)"; exit 4; }
    "$PY" -c 'from numba import cuda; cuda.detect()' || exit 4
fi

step "tests: kernels and the CUDA proving path on the device (CUZK_TEST_CUDA=$MODE)"
# -m "not interop": snarkjs is not installed there, and `make tools` (npm) cannot reach the
# registry; the snarkjs check of CUDA proofs runs in the normal suite here.
CUZK_TEST_CUDA=$MODE timeout "${TESTS_TIMEOUT:-330}" "$PY" -m pytest -q -p no:cacheprovider \
    tests/test_field.py tests/test_curve.py tests/test_batch.py tests/test_ntt.py \
    tests/test_msm.py tests/test_cuda_prove.py tests/test_plonk_cuda.py -k cuda \
    -m "not interop" --durations=15
rc_tests=$?
echo "tests: exit $rc_tests"

step "PLONK on CUDA: cuzk prove --device cuda:0 on PLONK keys, each proof checked by cuzk verify"
# the committed PLONK fixtures (snarkjs's keys and verification keys); none by default in
# the simulator (MODE=sim), where the MSMs run as Python: tiny381 takes minutes there
# (PLONK_CIRCUITS=tiny381 PLONK_TIMEOUT=900 to try the step anyway)
if [ "$MODE" = gpu ]; then PLONK=${PLONK_CIRCUITS-mulchain nested tiny381}; else
    PLONK=${PLONK_CIRCUITS-}; echo "no PLONK proofs in the simulator unless PLONK_CIRCUITS"; fi
mkdir -p "$OUT/plonk"
rc_plonk=0
for c in $PLONK; do
    fx=tests/fixtures/$c
    if [ "$MODE" = sim ]; then sim=1; else sim=; fi
    NUMBA_ENABLE_CUDASIM=${sim:-0} timeout "${PLONK_TIMEOUT:-180}" "$PY" -m cuzk.cli prove \
        --device cuda:0 --timings "$fx/plonk.zkey" "$fx/witness_0.wtns" \
        "$OUT/plonk/$c.proof.json" "$OUT/plonk/$c.public.json" 2>&1 | grep -v '^numba' | tail -8
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] && { "$PY" -m cuzk.cli verify "$fx/plonk_vk.json" "$OUT/plonk/$c.public.json" \
        "$OUT/plonk/$c.proof.json"; rc=$?; }
    echo "plonk $c on cuda:0: exit $rc"
    [ "$rc" -ne 0 ] && [ "$rc_plonk" -eq 0 ] && rc_plonk=$rc
done
[ "$rc_tests" -eq 0 ] && rc_tests=$rc_plonk

rc_bench=0
if [ "$MODE" = gpu ]; then
    step "bench: profile gpu, suites arith ntt msm -> $OUT/bench"
    timeout "${BENCH_TIMEOUT:-200}" "$PY" -m bench --profile gpu --suite arith --suite ntt \
        --suite msm --no-report --results "$OUT/bench"
    rc_bench=$?
    echo "bench: exit $rc_bench"
fi

step "done: tests exit $rc_tests, bench exit $rc_bench (124 = timed out)"
[ "$rc_tests" -ne 0 ] && exit "$rc_tests"
exit "$rc_bench"
}

main 2>&1 | tee "$OUT/gpu_check.log"
exit "${PIPESTATUS[0]}"
