#!/usr/bin/env bash
# Manual two-way interop check against the reference (firecube 0.1.7), installed apart in .venv-firecube.
# Usage: FIRECUBE_PYTHON=.venv-firecube/bin/python bash run-interop.sh
# Needs `npx tsc -b packages/controlplane` first. Exits non-zero on the first disagreement.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${FIRECUBE_PYTHON:?set FIRECUBE_PYTHON to a python with firecube==0.1.7}"
fc() { "$py" -m firecube "$@"; }
count() { "$py" -c 'import sys,json; print(len(json.JSONDecoder().raw_decode(sys.stdin.read())[0]))'; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$here"

echo "== ours writes, the reference reads"
node zs-write.mjs "$work/DEMO.zarr" DEMO
P="file://$work/DEMO.zarr"
[ "$(fc chunks runs list -n "$P" -f json | count)" = 4 ] || { echo "reference sees a different run count"; exit 1; }
[ "$(fc chunks claims list -n "$P" -f json | count)" = 1 ] || { echo "reference sees a different claim count"; exit 1; }
[ "$(fc chunks list -n "$P" -f json 2>/dev/null | count)" = 29 ] || { echo "reference projects differently"; exit 1; }
fc zarr index verify --target "$P" --product-name DEMO
fc chunks claims clear -n "$P" --domain DEMO:zarr_append:data --force --yes-i-really-mean-it
fc chunks runs abandon -n "$P" --run-id zs-run-4-live --reason interop --yes-i-really-mean-it
fc chunks snapshots rebuild -n "$P"
node zs-read.mjs "$work/DEMO.zarr" DEMO | tee "$work/ours.txt"
grep -q '"source":"snapshot".*"same":true' "$work/ours.txt" || { echo "we do not read the reference snapshot"; exit 1; }

echo "== the reference writes, ours reads and recovers, the reference reads back"
mkdir "$work/REF.zarr"
"$py" reference_writes.py "$work/REF.zarr"
node zs-read.mjs "$work/REF.zarr" REF | tee "$work/ref.txt"
grep -q '"records":34,"replayRecords":34,"same":true' "$work/ref.txt" || { echo "our projection differs"; exit 1; }
grep -q '"ref-4-live","live",2,{"file"' "$work/ref.txt" || { echo "torn tail not accepted"; exit 1; }
node zs-cli.mjs claims clear --all-stale --store "$work/REF.zarr"
node zs-cli.mjs claims clear --domain REF:zarr_append:data --force --store "$work/REF.zarr"
node zs-cli.mjs runs abandon --run-id ref-4-live --force --reason interop --store "$work/REF.zarr"
node zs-cli.mjs snapshots rebuild --store "$work/REF.zarr"
P="file://$work/REF.zarr"
fc chunks runs list -n "$P" -f json | grep -q '"status": "abandoned"' || { echo "reference misses our abandon"; exit 1; }
fc chunks snapshots status -n "$P"
[ "$(fc chunks list -n "$P" -f json 2>/dev/null | count)" = 31 ] || { echo "reference reads our snapshot differently"; exit 1; }
echo "== the reference crashes mid-segment; zstream recover seals the torn tail and recovers; the reference reads"
mkdir "$work/TORN.zarr"
"$py" torn_writes.py "$work/TORN.zarr"
node zs-cli.mjs recover --store "$work/TORN.zarr" || { echo "recover did not complete"; exit 1; }
[ "$(tail -c 1 "$work/TORN.zarr/.firecube/runs/torn-2/events-00001.jsonl" | od -An -c | tr -d ' ')" = '\n' ] ||
  { echo "torn segment not sealed"; exit 1; }
P="file://$work/TORN.zarr"
fc chunks runs list -n "$P" -f json | grep -q '"status": "abandoned"' || { echo "reference misses the abandon"; exit 1; }
fc chunks snapshots status -n "$P"
[ "$(fc chunks list -n "$P" -f json 2>/dev/null | count)" = 5 ] || { echo "reference reads the repaired product differently"; exit 1; }
echo "interop OK"
