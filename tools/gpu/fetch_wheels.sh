#!/usr/bin/env bash
# Fills .whl/ (repository root, ignored through .git/info/exclude) with the wheels a
# CUDA machine's Python 3.12 image lacks for the Python suite: the language server's
# libraries, the profiler plugin, pytest and its plugins, and the native-writer libraries
# the file journal's tests use. Versions come from requirements/dev.lock (one place);
# the few not in the lock (pytest-xdist, execnet) are pinned below.
#
#   tools/gpu/fetch_wheels.sh            # then carry .whl to the machine
#
# tools/gpu/check.sh installs them there with pip --no-index --no-deps.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOCK=requirements/dev.lock
DEST=.whl
PYTHON=${PYTHON:-python3}

# What the image lacks (or has at a version the suite was not written against).
FROM_LOCK=(
  pygls lsprotocol cattrs attrs typing_extensions debugpy
  pytest pluggy iniconfig pytest-timeout pytest-asyncio pytest-lsp
  tensorboard torch-tb-profiler
  zarr numcodecs donfig google-crc32c lmdb soundfile cffi pycparser
)
EXTRA=(pytest-xdist==3.8.0 execnet==2.1.2)

# info/exclude lives in the common git folder: a worktree and the main checkout share it.
exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
grep -qxF "/$DEST/" "$exclude" 2>/dev/null || echo "/$DEST/" >>"$exclude"
rm -rf "$DEST"
mkdir -p "$DEST"

pins=()
for name in "${FROM_LOCK[@]}"; do
  # The lock spells names as their projects do (typing_extensions, Jinja2): match loosely.
  pattern=$(printf '%s' "$name" | sed 's/[-_.]/[-_.]/g')
  pin=$(grep -iE "^${pattern}==" "$LOCK" || true)
  [ -n "$pin" ] || { echo "fetch_wheels: $name is not in $LOCK" >&2; exit 1; }
  pins+=("$pin")
done
pins+=("${EXTRA[@]}")

platforms=()
for n in 17 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
# --constraint /dev/null: a machine-wide constraints file must not veto the lock's pins.
PIP_CONSTRAINT= "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  --platform any -d "$DEST" "${pins[@]}" 2> >(grep -v "^WARNING: Location" >&2)

count=$(ls "$DEST"/*.whl | wc -l)
size=$(du -sh "$DEST" | cut -f1)
echo "fetch_wheels: $count wheels, $size in $DEST/"
