#!/usr/bin/env bash
# Creates .venv with the Python cross-check peers (zarr-python, TensorStore, numcodecs, xarray).
# Idempotent: reinstalls only when python/requirements.txt changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "setup-python: python3 not found; Python cross-checks unavailable"; exit 0; }
stamp=.venv/.requirements.sha256
want=$(sha256sum python/requirements.txt | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r python/requirements.txt
echo "$want" > "$stamp"
echo "setup-python: .venv ready ($(.venv/bin/python -c 'import zarr,tensorstore;print("zarr",zarr.__version__)'))"
