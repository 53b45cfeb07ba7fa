#!/usr/bin/env bash
# Every check a CUDA machine is needed for, in one call of about 8 minutes:
#   setup     the wheels carried in .whl/ (tools/gpu/fetch_wheels.sh fills it) installed into
#             the machine's Python, this checkout put on its path; GPU and versions printed
#   gpu       tools/gpu/gpu_checks.py: a CUDA script run as written; --profile's kernels and
#             the profiler plugin's GPU Kernel view over HTTP
#   forecast  benchmarks/forecast_vs_measured.py: the memory forecast against the GPU's own
#             allocator, row by row
#   pytest    the Python suite on this Python and torch, the GPU-relevant files first
# gpu then forecast run beside pytest. Each step has its own time limit, so one that hangs
# cannot eat the others' time; the summary comes last whatever happened. Files under $OUT:
#   summary.txt setup.log gpu.log forecast.txt forecast.json pytest.log pytest.xml
#
#   OUT=/tmp/out tools/gpu/check.sh        # BUDGET_S (default 450) bounds the whole run
#
# To rehearse on a machine without a GPU: WHEELS=/nonexistent (install nothing; the
# interpreter as it is), FORECAST_ARGS="--dry-run --only LSTM", PYTEST_FILES="tests/forecast".
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-450}
WORKERS=${WORKERS:-11} # with the forecast's 4 processes: the 16 cores of such a machine
WHEELS=${WHEELS:-.whl}
FORECAST_ARGS=${FORECAST_ARGS:-}
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/quickdev-check-cache
T0=$(date +%s)
since() { echo $(($(date +%s) - T0)); }
left() { echo $((BUDGET_S - $(since))); }
STEPS=/tmp/check-steps.txt # each step's exit status and seconds, also from the side chain
: >"$STEPS"

# step NAME LIMIT_S LOG COMMAND...: runs COMMAND with its output in LOG, killed at LIMIT_S
# (SIGINT first, so pytest still prints its summary, then SIGKILL 20 s later).
step() {
  local name=$1 limit=$2 log=$3 started
  shift 3
  started=$(date +%s)
  echo "[$(since) s] $name: start (limit ${limit} s)"
  timeout -s INT -k 20 "$limit" "$@" >"$log" 2>&1
  local rc=$? took=$(($(date +%s) - started))
  [ $rc = 124 ] && echo "$name: stopped at its limit of $limit s" >>"$log"
  echo "$name: exit $rc after $took s$([ $rc = 124 ] && echo ' (its time limit)')" >>"$STEPS"
  echo "[$(since) s] $name: exit $rc after $took s"
}

setup() {
  set -x
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$PY" -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count())'
  echo "PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-}"
  local wheels site
  if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    echo "no wheels in $WHEELS: the interpreter as it is"
    wheels=""
  else
    wheels=$(ls "$WHEELS"/*.whl | grep -v '/tensorboard-')
  fi
  # Into the interpreter's own environment, as a developer's venv holds them (no
  # PYTHONPATH that jobs, children and TensorBoard would each have to inherit).
  if [ -z "$wheels" ]; then
    :
  elif "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade $wheels; then
    # The checkout as an editable install leaves it (sources on the path, the quickdev
    # command), without asking the image for the project's build backend.
    site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$PWD/python_backend" >"$site/torch_quickdev_checkout.pth"
    bin=$("$PY" -c 'import os, sys; print(os.path.dirname(sys.executable))')
    printf '#!%s\nimport sys\nfrom quickdev.cli import main\nsys.exit(main())\n' \
      "$("$PY" -c 'import sys; print(sys.executable)')" >"$bin/quickdev"
    chmod +x "$bin/quickdev"
  else
    echo "could not install into the interpreter's environment: /tmp/site and PYTHONPATH"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$WHEELS"/*.whl || return 1
    echo "export PYTHONPATH=/tmp/site:$PWD/python_backend" >/tmp/check-env.sh
  fi
  # TensorBoard as pinned, only where the image's protobuf and grpcio satisfy it.
  if ls "$WHEELS"/tensorboard-*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-compile --no-cache-dir --find-links "$WHEELS" \
      "tensorboard==$(ls "$WHEELS"/tensorboard-*.whl | sed 's/.*tensorboard-\([^-]*\)-.*/\1/')" ||
      echo "kept the image's tensorboard: the pinned one needs what the image lacks"
  fi
  set +x
  [ -f /tmp/check-env.sh ] && . /tmp/check-env.sh
  "$PY" - <<'EOF'
from importlib.metadata import PackageNotFoundError, version
import shutil, sys
import quickdev
def version_of(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return "-"
names = ["torch", "pygls", "lsprotocol", "cattrs", "attrs", "debugpy", "pytest", "pytest-xdist",
         "pytest-asyncio", "pytest-lsp", "pytest-timeout", "tensorboard", "torch-tb-profiler",
         "protobuf", "transformers", "lightning", "accelerate", "pandas", "zarr", "lmdb",
         "soundfile", "numpy"]
import os
command = shutil.which("quickdev", path=os.path.dirname(sys.executable))
print("quickdev from", quickdev.PACKAGE_DIR, "command", command)
print(" ".join(f"{n}=={version_of(n)}" for n in names))
for module in ("pygls.lsp.server", "pytest_lsp", "torch_tb_profiler", "zarr", "lmdb", "soundfile", "xdist"):
    __import__(module)
print("imports ok")
EOF
}

# The suite's files, GPU-relevant first: if the time runs out, it is the rest that is cut.
# The two browser files need Chromium, which the image lacks and which is too large to carry.
test_files() {
  local first="tests/job/test_device.py tests/limits/test_device_availability.py
    tests/tensorboard/test_plugin_api.py tests/limits/test_autocast.py tests/forecast
    tests/limits/test_forecast_capture.py tests/profiling tests/tensorboard tests/limits
    tests/job tests/warm tests/child_site"
  {
    for f in $first; do
      if [ -d "$f" ]; then find "$f" -name 'test_*.py' | sort; elif [ -f "$f" ]; then echo "$f"; fi
    done
    find tests -name 'test_*.py' -not -path 'tests/e2e/*' | sort
  } | awk '!seen[$0]++' | grep -v -e tests/tensorboard/test_views.py -e tests/tensorboard/test_screenshot.py
}

echo "check: budget ${BUDGET_S} s, output in $OUT"
export -f setup
export PY WHEELS
step setup 120 "$OUT/setup.log" bash -c setup
tail -4 "$OUT/setup.log"
[ -f /tmp/check-env.sh ] && . /tmp/check-env.sh

# gpu checks, then the forecast table, beside pytest; each bounded, both inside the budget.
(
  step gpu 150 "$OUT/gpu.log" "$PY" tools/gpu/gpu_checks.py
  # Nothing starts later than one process's time limit before the step's own, so every
  # row that started ends inside it and the table prints.
  limit=$(($(left) - 25))
  step forecast $limit "$OUT/forecast.txt" "$PY" benchmarks/forecast_vs_measured.py \
    --jobs 4 --timeout-s 120 --deadline-s "$((limit > 160 ? limit - 130 : 30))" \
    --json "$OUT/forecast.json" $FORECAST_ARGS
) &
side=$!

files=${PYTEST_FILES:-$(test_files)}
# No test starts in the last 100 s of pytest's limit (tests/conftest.py skips it, saying so),
# so the session ends with its summary; a test still running at the limit is interrupted.
limit=$(($(left) - 30))
export QUICKDEV_TEST_DEADLINE=$(($(date +%s) + limit - 100))
# The plugins a developer's venv loads, and no others: the image's own (pytest-benchmark,
# pytest-cov, hypothesis, ...) were built for its pytest, not the pinned one.
plugins=$("$PY" - <<'EOF'
import importlib
for name in ("xdist.plugin", "pytest_asyncio.plugin", "pytest_lsp", "pytest_timeout",
             "anyio.pytest_plugin"):
    try:
        importlib.import_module(name)
        print("-p", name, end=" ")
    except ImportError:
        pass  # left out: pytest then names what is missing, if a test needs it
EOF
)
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 step pytest $limit "$OUT/pytest.log" "$PY" -m pytest \
  -p no:cacheprovider $plugins -n "$WORKERS" -q --timeout 200 --junitxml "$OUT/pytest.xml" $files
unset QUICKDEV_TEST_DEADLINE
wait $side

{
  echo "== check summary ($(since) s of ${BUDGET_S} s)"
  grep -h -e "^NVIDIA\|^H[12]00\|^torch \|^quickdev from\|imports ok\|kept the image" "$OUT/setup.log"
  echo "-- gpu checks"
  grep -E "^(cuda script|profile|gpu checks|  (DEVICES|DTYPES|result.json|trace|TensorBoard|GPU Kernel|ok|FAIL|summary))" "$OUT/gpu.log"
  echo "-- forecast vs measured"
  tail -40 "$OUT/forecast.txt"
  echo "-- pytest"
  # Short enough for a 12,000-character output tail; pytest.log and pytest.xml hold all.
  echo "failed or errors: $(grep -cE "^(FAILED|ERROR) " "$OUT/pytest.log") (first 40 below)"
  grep -E "^(FAILED|ERROR) " "$OUT/pytest.log" | cut -c1-170 | head -40
  grep "deadline passed" "$OUT/pytest.log" | cut -c1-160
  tail -1 "$OUT/pytest.log"
  echo "-- steps"
  cat "$STEPS"
} | tee "$OUT/summary.txt"
