#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine: the C codec libraries, chromium and fincore (apt,
# when root and missing), the npm workspace, and the Python cross-check peers.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
[ -f /usr/include/blosc.h ] || need+=(libblosc-dev)
[ -f /usr/include/zstd.h ] || need+=(libzstd-dev)
[ -x /usr/bin/chromium ] || need+=(chromium) # the viewer's end-to-end test drives Debian's chromium
command -v fincore >/dev/null || need+=(util-linux-extra) # shows that direct writes bypass the page cache
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: ${need[*]} missing and not root: codecs fall back to WebAssembly, browser and page-cache tests cannot run"
  fi
fi
npm ci --no-audit --no-fund
bash scripts/setup-python.sh
