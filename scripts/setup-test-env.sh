#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine: clang, lld and wasi-libc (the codecs' SIMD wasm
# build), chromium, fincore and Open MPI (apt, when root and missing), the npm workspace, the Python
# cross-check peers, Node 22 and 24 (from the npm registry) and Versity's S3 gateway (built from the Go
# module proxy), both into the git-ignored .tools/ and skipped when already there. The codecs and fileio
# addons (built by `npm ci`) need no OS library: our Blosc and zstd's sources (fetched from npm) are
# compiled in.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v clang >/dev/null || need+=(clang)
command -v wasm-ld >/dev/null || need+=(lld)
[ -f /usr/lib/wasm32-wasi/libc.a ] || need+=(wasi-libc)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null || need+=(libclang-rt-14-dev-wasm32)
[ -x /usr/bin/chromium ] || need+=(chromium) # the viewer's end-to-end test drives Debian's chromium
command -v fincore >/dev/null || need+=(util-linux-extra) # shows that direct writes bypass the page cache
command -v mpirun >/dev/null || need+=(openmpi-bin) # a real launcher for the multi-process tests
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: ${need[*]} missing and not root: no SIMD wasm codecs build; browser, page-cache, mpirun and versitygw tests cannot run"
  fi
fi
npm ci --no-audit --no-fund
bash scripts/setup-python.sh
# Node 22 and 24 LTS from the npm registry into .tools/ (the unit tests also run on them); without them the
# `--node-lts` test task fails under CI naming the missing release, and skips elsewhere.
node scripts/setup-node-lts.mjs || echo "setup: an LTS Node release is missing (see above): its unit-test run cannot start" >&2
# The second S3 server of the tests: a real gateway serving a directory, beside the moto emulator.
VERSITYGW_VERSION=v1.8.0
if [ -x .tools/gopath/bin/versitygw ] && [ "$(cat .tools/versitygw.version 2>/dev/null)" = "$VERSITYGW_VERSION" ]; then
  : # built by an earlier setup
elif command -v go >/dev/null; then
  # Modules and build cache stay in the user's Go caches, so a fresh clone on the same machine links in seconds
  # (asked for before GOPATH is set: the module cache defaults to a folder inside GOPATH).
  modcache="$(go env GOMODCACHE)"
  GOPATH="$PWD/.tools/gopath" GOMODCACHE="$modcache" GOFLAGS=-modcacherw \
    go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  echo "$VERSITYGW_VERSION" > .tools/versitygw.version
else
  # Only the versitygw suites need it; under CI they then fail naming the missing binary.
  echo "setup: go is missing (Go >= 1.25 from go.dev; Debian's golang-go is too old): versitygw tests cannot run" >&2
fi
