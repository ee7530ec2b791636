#!/usr/bin/env bash
# Streaming gzip inflate with zlib, ISA-L (igzip) and libdeflate side by side on one gzip trace
# (bench/inflate/inflate_compare.cc says how). Needs zlib1g-dev, libisal-dev and libdeflate-dev;
# skips with a note when one is missing. Not a test.
#   bench/inflate_compare.sh [FILE.json.gz]   (default: the largest shared HTA trace, if present)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
file="${1:-/work/shared/data/traces/hta_ddp_allreduce_5step_rank1/df_index_resolver.json.gz}"
for h in zlib.h isa-l/igzip_lib.h libdeflate.h; do
  if [ ! -e "/usr/include/$h" ]; then
    echo "inflate_compare: skipped (/usr/include/$h missing: apt-get install libisal-dev libdeflate-dev)"
    exit 0
  fi
done
[ -e "$file" ] || { echo "inflate_compare: skipped ($file not found)"; exit 0; }
bin="$(mktemp)"
trap 'rm -f "$bin"' EXIT
g++ -O2 -std=c++20 "$here/inflate/inflate_compare.cc" -o "$bin" -lz -lisal -ldeflate || exit 1
for i in 1 2 3; do "$bin" "$file" || exit 1; done
