#!/usr/bin/env bash
# Creates the Python cross-check environments (never used in production):
#   .venv          zarr-python, TensorStore, numcodecs, xarray, ... from python/requirements.txt, and the
#                  repository's Python package (python/zarr_stream) installed editable
#   .venv-firecube the reference control plane (firecube) from python/requirements-firecube.txt
# Both need Python >= 3.12 (the newest zarr-python, numcodecs and numpy require it; pyenv provides it where
# the system Python is older). Idempotent: each is rebuilt only when its requirements file or interpreter
# changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

make_venv() { # dir python requirements
  local dir=$1 py=$2 req=$3
  local stamp="$dir/.requirements.sha256" want
  want=$( (sha256sum "$req" | cut -d' ' -f1; "$py" --version) | sha256sum | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  rm -rf "$dir"
  "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
  echo "setup-python: $dir ready ($("$dir/bin/python" --version))"
}

py312=""
for c in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python python3.13 "$HOME"/.pyenv/versions/3.13*/bin/python python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    py312=$c
    break
  fi
done
if [ -z "$py312" ]; then
  echo "setup-python: no Python >= 3.12 found; the Python cross-checks are unavailable"
  exit 0
fi
make_venv .venv "$py312" python/requirements.txt
# The repository's Python package, editable from this checkout (its dependencies are pinned in
# requirements.txt above, so --no-deps; setuptools from there builds it without network). Re-installed
# when .venv imports another checkout's copy.
want="$PWD/python/zarr_stream/src/zarr_stream/__init__.py"
if [ "$(.venv/bin/python -c 'import zarr_stream; print(zarr_stream.__file__)' 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e ./python/zarr_stream
  echo "setup-python: zarr_stream installed from python/zarr_stream"
fi
make_venv .venv-firecube "$py312" python/requirements-firecube.txt
