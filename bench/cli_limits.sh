#!/usr/bin/env bash
# Peak memory and time of the CLI at the largest inputs its limits allow, and the refusal just past
# each limit. Not a test (timings depend on the machine): run it by hand after changing a limit.
#   bench/cli_limits.sh build/infralens [max_rss_mib]
# Prints one line per case: peak RSS (from /usr/bin/time -v), seconds, exit code, output size; and
# fails when a case exceeds max_rss_mib (default 1024, the bound docs/cli.md states) or when an
# input past a limit is not refused with exit 2.
set -u
bin="$(realpath "$1")"
max_mib="${2:-1024}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bad=0

# run NAME ARGS...: runs the binary under /usr/bin/time -v and reports.
run() {
  local name="$1"; shift
  /usr/bin/time -v "$bin" "$@" >"$work/stdout" 2>"$work/time"
  local rc=$?
  local kb secs size
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time")
  size=$(du -sb "$work/out" 2>/dev/null | cut -f1)
  printf '%-58s rss %6d MiB  wall %8s  exit %d  output %s bytes\n' "$name" $((kb / 1024)) "$secs" "$rc" "${size:-0}"
  if [ "$rc" != 0 ]; then echo "  FAIL: exit $rc: $(grep -v '^\s' "$work/time" | head -1)"; bad=$((bad + 1)); fi
  if [ $((kb / 1024)) -gt "$max_mib" ]; then echo "  FAIL: above $max_mib MiB"; bad=$((bad + 1)); fi
  rm -rf "$work/out"
}

# refused NAME ARGS...: must exit 2 at once with one line.
refused() {
  local name="$1"; shift
  local start end rc
  start=$(date +%s%N)
  "$bin" "$@" >/dev/null 2>"$work/err"
  rc=$?
  end=$(date +%s%N)
  printf '%-58s exit %d in %d ms: %s\n' "$name" "$rc" $(((end - start) / 1000000)) "$(head -c 140 "$work/err")"
  if [ "$rc" != 2 ] || [ "$(wc -l <"$work/err")" != 1 ]; then echo "  FAIL: want exit 2 and one line"; bad=$((bad + 1)); fi
}

# The largest -m compare accepts for --pp P --vpp V: probe with a bad --f, which is checked after
# the work bound, so "comparing every schedule" in the message means m is past the limit.
compare_max_m() {
  local lo=1 hi=100000000 mid
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if "$bin" compare --pp "$1" --vpp "$2" -m "$mid" --f -1 2>&1 | grep -q "comparing every schedule"; then
      hi=$mid
    else
      lo=$mid
    fi
  done
  echo "$lo"
}

echo "== schedule: 10 million actions as text, 1 million as a document"
# zbv: 3 actions per (stage, microbatch), 2 chunks per rank; 1f1b: 2 per (stage, microbatch).
# zbv: F, I and W on 2 chunks per rank: 3 x 2 x 8 x m <= 10 million -> m = 208,333.
run "schedule zbv --pp 8 -m 208333 --format ascii" schedule -s zbv --pp 8 -m 208333 -o "$work/out"
run "schedule zbv --pp 8 -m 208333 --format csv" schedule -s zbv --pp 8 -m 208333 --format csv -o "$work/out"
run "schedule 1f1b --pp 1024 -m 4882 --format ascii" schedule -s 1f1b --pp 1024 -m 4882 -o "$work/out"
run "schedule interleaved --pp 1024 --vpp 64 -m 76 --format csv" schedule -s interleaved-1f1b --pp 1024 --vpp 64 -m 76 --format csv -o "$work/out"
run "schedule dualpipev --pp 8 -m 208333 --format csv" schedule -s dualpipev --pp 8 -m 208333 --format csv -o "$work/out"
# Documents: 3 x 2 x 8 x m <= 1 million -> m = 20,833.
run "schedule zbv --pp 8 -m 20833 --json" schedule -s zbv --pp 8 -m 20833 --json -o "$work/out"
run "schedule 1f1b --pp 8 -m 62500 --format chrome" schedule -s 1f1b --pp 8 -m 62500 --format chrome -o "$work/out"
run "schedule 1f1b --pp 8 -m 62500 --format svg" schedule -s 1f1b --pp 8 -m 62500 --format svg -o "$work/out"
# GPipe (1F1B needs m >= P): 2 x 1024 x 488 = 999,424 actions.
run "schedule gpipe --pp 1024 -m 488 --json" schedule -s gpipe --pp 1024 -m 488 --json -o "$work/out"
run "schedule 1f1b --pp 8 -m 8 --width 10000" schedule -s 1f1b --pp 1024 -m 1024 --width 10000 -o "$work/out"
refused "schedule zbv --pp 8 -m 208334" schedule -s zbv --pp 8 -m 208334
# A generated schedule's csv streams up to 64 million actions: 1f1b 2 x 64 x 500,000 = 64,000,000.
run "schedule 1f1b --pp 64 -m 500000 --format csv (streamed)" schedule -s 1f1b --pp 64 -m 500000 --format csv -o "$work/out"
run "schedule gpipe --pp 1 -m 32000000 --format csv (worst)" schedule -s gpipe --pp 1 -m 32000000 --format csv -o "$work/out"
refused "schedule 1f1b --pp 64 -m 500001 --format csv" schedule -s 1f1b --pp 64 -m 500001 --format csv
refused "schedule zbv --pp 8 -m 62501 --json" schedule -s zbv --pp 8 -m 62501 --json
refused "schedule --pp 1025" schedule --pp 1025
refused "schedule --vpp 65" schedule -s interleaved-1f1b --vpp 65
refused "schedule gpipe --pp 8 -m 2000000 --json" schedule -s gpipe --pp 8 -m 2000000 --json
refused "schedule --pp 1024 -m 16000" schedule --pp 1024 -m 16000
refused "schedule --f 1e308 --b 1e308" schedule --f 1e308 --b 1e308

echo "== compare: 20 million simulated actions in all"
for shape in "1 0" "8 0" "1024 0" "128 16"; do
  set -- $shape
  m=$(compare_max_m "$1" "$2")
  run "compare --pp $1 --vpp $2 -m $m (largest m) --json" compare --pp "$1" --vpp "$2" -m "$m" --json -o "$work/out"
  refused "compare --pp $1 --vpp $2 -m $((m + 1))" compare --pp "$1" --vpp "$2" -m $((m + 1))
done
refused "compare --pp 1000000" compare --pp 1000000

echo "== trace synth: files streamed to disk; events bounded"
run "trace synth 1f1b --pp 8 -m 64 --steps 3" trace synth -s 1f1b --pp 8 -m 64 -o "$work/out"
run "trace synth zbv --pp 64 -m 2048 --steps 1" trace synth -s zbv --pp 64 -m 2048 --steps 1 -o "$work/out"
refused "trace synth --steps 1000000 --kernels-per-action 10000" trace synth --steps 1000000 --kernels-per-action 10000 -o "$work/never"

echo "$bad failed"
[ "$bad" = 0 ]
