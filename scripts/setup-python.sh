#!/usr/bin/env bash
# Creates the Python cross-check environments (never used in production):
#   .venv          zarr-python, TensorStore, numcodecs, xarray, ... from python/requirements.txt
#   .venv-firecube the reference control plane (firecube, Python >= 3.12) from python/requirements-firecube.txt
# Idempotent: each is reinstalled only when its requirements file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

make_venv() { # dir python requirements
  local dir=$1 py=$2 req=$3
  local stamp="$dir/.requirements.sha256" want
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
  echo "setup-python: $dir ready ($("$dir/bin/python" --version))"
}

command -v python3 >/dev/null || { echo "setup-python: python3 not found; Python cross-checks unavailable"; exit 0; }
make_venv .venv python3 python/requirements.txt

py312=""
for c in python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python" "$HOME/.pyenv/versions/3.13.0/bin/python"; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    py312=$c
    break
  fi
done
if [ -n "$py312" ]; then
  make_venv .venv-firecube "$py312" python/requirements-firecube.txt
else
  echo "setup-python: no Python >= 3.12 found; the firecube interop check is unavailable"
fi
