#!/usr/bin/env bash
# The pytest suite on the lent GPU machine, with the CUDA engine (vLLM 0.26 from ../shared/gpu parts a
# and b) and Qt (part q). Run it in the third call, after `source .gpu/q/install.sh`, with `.whl` carried:
# the wheels of what the suite needs beyond the kit (psygnal, import-linter and its dependencies; see
# docs/gpu-tests.md for the download command).
#
#   bash packaging/gpu_tests.sh LABEL [pytest arguments...]
#
# A device call lasts 10 minutes at most and a CUDA engine start about a minute, so the suite goes in
# parts: each call names its test files. pytest is stopped before the call's limit (GPU_TESTS_TIMEOUT,
# default 540 s), so what ran comes back. Results: $OUT/gpu-tests-LABEL.log (pytest -rA: one line a test;
# --durations: how long each test and fixture took, to plan the next calls' parts).
set -u
OUT=${OUT:-/tmp/out}
label=${1:?usage: gpu_tests.sh LABEL [pytest arguments]}
shift
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/wb-test-site .whl/*.whl \
  || { echo "gpu_tests: the wheels in .whl did not install" >&2; exit 2; }
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/wb-test-site:$PWD/packaging
# The shared window's engine starts without CUDA graphs (seconds, not a minute a start; EAGER=0 for
# graphs): the suite's dozen starts fit the device budget. Graph starts are what the first-start
# check and the benchmarks run.
export WORKBENCH_TEST_ENFORCE_EAGER=${EAGER:-1}
export QT_QPA_PLATFORM=offscreen PYTHONUNBUFFERED=1
export WORKBENCH_DATA_DIR=${WORKBENCH_DATA_DIR:-/tmp/wb-gpu-tests}  # kept between calls: the demo model is built once
python3 -c "import vllm, torch, PySide6; print('gpu_tests: vllm', vllm.__version__, 'torch', torch.__version__, torch.cuda.get_device_name(0), 'PySide6', PySide6.__version__)" | tee "$OUT/gpu-tests-$label.log"
timeout "${GPU_TESTS_TIMEOUT:-540}" python3 -m pytest -p no:cacheprovider -p pytest_report_now --tb=short -rA --durations=0 -o console_output_style=classic "$@" 2>&1 \
  | grep -v "^(.*) INFO\|^INFO " | tee -a "$OUT/gpu-tests-$label.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED|XFAIL)|passed|failed|^--- FAILED NOW|^E  "
echo "gpu_tests: pytest exit ${PIPESTATUS[0]} (124: stopped at the time limit)" | tee -a "$OUT/gpu-tests-$label.log"
