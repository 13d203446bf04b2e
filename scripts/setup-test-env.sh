#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine: clang, lld and wasi-libc (the codecs' SIMD wasm
# build), chromium and fincore (apt, when root and missing), the npm workspace, and the Python cross-check
# peers. The codecs addon needs no OS library: our Blosc and zstd's sources (fetched from npm) are compiled in.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v clang >/dev/null || need+=(clang)
command -v wasm-ld >/dev/null || need+=(lld)
[ -f /usr/lib/wasm32-wasi/libc.a ] || need+=(wasi-libc)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null || need+=(libclang-rt-14-dev-wasm32)
[ -x /usr/bin/chromium ] || need+=(chromium) # the viewer's end-to-end test drives Debian's chromium
command -v fincore >/dev/null || need+=(util-linux-extra) # shows that direct writes bypass the page cache
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: ${need[*]} missing and not root: no SIMD wasm codecs build, browser and page-cache tests cannot run"
  fi
fi
npm ci --no-audit --no-fund
bash scripts/setup-python.sh
