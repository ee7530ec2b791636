#!/usr/bin/env bash
# The figures of issue 21 in CPU seconds (user + system, so a busy machine blurs them less than
# wall time) and peak memory, from the CLI, one line per case; docs/performance.md quotes them.
#   bench/cpu_figures.sh build/infralens [another/infralens ...]
# With two binaries (before and after a change) every case runs on each in turn, side by side.
# Not a test: timings depend on the machine. `make bench` runs it after the Google Benchmarks.
set -u
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# case NAME ARGS...: runs every binary once under /usr/bin/time and prints CPU-s, wall, RSS, exit.
case_() {
  local name="$1"; shift
  for bin in "${bins[@]}"; do
    /usr/bin/time -f '%U %S %e %M' -o "$work/time" "$bin" "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    read -r user sys wall kb < <(tail -1 "$work/time")
    printf '%-44s %-28s cpu %7.2f s  wall %6.2f s  rss %6d MiB  exit %d\n' "$name" \
      "$(basename "$(dirname "$(dirname "$bin")")")/$(basename "$(dirname "$bin")")" \
      "$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')" "$wall" $((kb / 1024)) "$rc"
    [ "$rc" = 0 ] || sed -n 1p "$work/err" | cut -c1-160 | sed 's/^/    /'
  done
}

bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
[ ${#bins[@]} -gt 0 ] || { echo "usage: $0 build/infralens [before/infralens]" >&2; exit 2; }

# Planner: one given layout, Calculon's question, and searches.
case_ "plan: one layout (llama3-70b, 64 H100)" plan --model llama3-70b --gpus 64 --tp 8 --pp 4 --global-batch 512
case_ "plan: Calculon's question (13B, 64 A100)" plan --model llama2-13b --cluster dgx-a100 --gpus 64 --global-batch 512
case_ "search: llama3-405b on 16,384 H100" plan --model llama3-405b --gpus 16384 --global-batch 2048
case_ "search: deepseek-v3 on 2,048 H100" plan --model deepseek-v3 --gpus 2048 --global-batch 8192
case_ "search: mixtral-8x7b on 2,048 H100, 32K" plan --model mixtral-8x7b --gpus 2048 --global-batch 2048 --seq 32768
case_ "search 1 s: mixtral-8x7b on 2,048 H100, 32K" plan --model mixtral-8x7b --gpus 2048 --global-batch 2048 --seq 32768 --search-seconds 1
# Simulator and CSV output.
case_ "schedule csv: interleaved pp 64 v 2 m 4096" schedule --schedule interleaved-1f1b --pp 64 --vpp 2 -m 4096 --format csv
case_ "schedule csv: interleaved pp 64 v 4 m 19,520" schedule --schedule interleaved-1f1b --pp 64 --vpp 4 -m 19520 --format csv
# 51.2M actions: m = 100,000 is refused by PyTorch's round rule (a multiple of max(1, m/pp) =
# 1,562 rounds), so m = 100,032 (1,563 rounds of 64). Streamed: to /dev/null and to a file (-o,
# through a temporary renamed at the end).
case_ "schedule csv: interleaved pp 64 v 4 m 100,032" schedule --schedule interleaved-1f1b --pp 64 --vpp 4 -m 100032 --format csv
case_ "schedule csv -o file: pp 64 v 4 m 100,032" schedule --schedule interleaved-1f1b --pp 64 --vpp 4 -m 100032 --format csv -o "$work/sched.csv"
rm -f "$work/sched.csv"
# Traces: the shared HTA traces beside the repository, when present.
traces=/work/shared/data/traces
if [ -d "$traces" ]; then
  case_ "trace analyze: 54 MB gzip, 1 rank" trace analyze "$traces/hta_ddp_allreduce_5step_rank1"
  case_ "trace analyze: 8 ranks (dlrm)" trace analyze "$traces/param_dlrm_8rank"
fi
