#!/usr/bin/env bash
# End-to-end checks of the binary's exit codes and stream discipline (data on stdout, one-line
# errors on stderr). Usage: cli_test.sh path/to/infralens
set -u
bin="$(realpath "$1")"
pass=0 fail=0
expect() {  # expect CODE DESCRIPTION -- ARGS...
  local want="$1" desc="$2"; shift 3
  local err; err=$(mktemp)
  "$bin" "$@" >/dev/null 2>"$err"
  local got=$?
  local lines; lines=$(wc -l <"$err")
  if [ "$got" != "$want" ]; then
    echo "FAIL: $desc: exit $got, want $want ($(head -c 300 "$err"))"; fail=$((fail+1))
  elif [ "$want" != 0 ] && [ "$lines" != 1 ]; then
    echo "FAIL: $desc: error should be one line, got $lines"; cat "$err"; fail=$((fail+1))
  else
    pass=$((pass+1))
  fi
  rm -f "$err"
}
expect 0 "top-level help" -- --help
expect 0 "version" -- --version
# No argument: the command list on stderr, nothing on stdout, exit 2.
noargs_out=$("$bin" 2>/dev/null); noargs_rc=$?
if [ "$noargs_rc" = 2 ] && [ -z "$noargs_out" ] && "$bin" 2>&1 >/dev/null | grep -q "commands:"; then
  pass=$((pass+1))
else
  echo "FAIL: no argument should exit 2 with the command list on stderr (exit $noargs_rc)"; fail=$((fail+1))
fi
expect 0 "schedule help" -- schedule --help
expect 0 "compare help" -- compare --help
expect 2 "unknown command" -- shedule
expect 2 "unknown flag" -- schedule --bogus
expect 2 "pp zero" -- schedule --pp 0
expect 2 "m zero" -- schedule -m 0
expect 2 "1f1b m<P" -- schedule --schedule 1f1b --pp 8 -m 4
expect 2 "zbv v=3" -- schedule --schedule zbv --vpp 3
expect 2 "dualpipev m<2P" -- schedule --schedule dualpipev --pp 4 -m 7
expect 2 "negative cost" -- schedule --f -1
expect 2 "non-numeric cost" -- schedule --b abc
expect 2 "unknown schedule" -- schedule --schedule zb-h3
expect 2 "too many actions" -- schedule --schedule gpipe --pp 10000 -m 10000
expect 2 "bad format" -- schedule --format png
expect 1 "missing csv" -- schedule --load /nonexistent/schedule.csv
expect 0 "compare runs" -- compare --pp 4 -m 8
expect 0 "topology runs" -- topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 4
expect 2 "degrees do not multiply" -- topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 3
expect 2 "unknown cluster" -- topology --cluster dgx-h1000 --nodes 8
expect 0 "comm runs" -- comm --cluster dgx-h100 --nodes 8 --collective all_reduce --size 1GiB --ranks 8
expect 2 "bad size" -- comm --cluster dgx-h100 --nodes 8 --collective all_reduce --size 1GiBB --ranks 8
expect 0 "model runs" -- model --model llama3-8b
expect 2 "unknown model" -- model --model llama9-1b
expect 0 "memory runs" -- memory --model llama2-7b --cluster dgx-h100 --gpus 8 --zero 1 --recompute selective
expect 2 "tp above heads" -- memory --model llama3-70b --tp 16
expect 0 "comm-plan runs" -- comm-plan --model llama3-70b --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --sp --global-batch 256
expect 2 "comm-plan gpu mismatch" -- comm-plan --model llama3-70b --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 2
expect 0 "presets runs" -- presets
expect 0 "plan searches" -- plan --model llama3-8b --cluster dgx-h100 --gpus 16 --global-batch 128 --seq 4096
expect 1 "plan impossible" -- plan --model llama3-405b --cluster dgx-h100 --gpus 8 --global-batch 8
expect 0 "plan exports" -- plan --model llama3-8b --cluster dgx-h100 --gpus 16 --global-batch 128 --seq 4096 --export deepspeed
expect 2 "plan bad export" -- plan --model llama3-8b --cluster dgx-h100 --gpus 16 --global-batch 128 --export nemo
expect 2 "plan bad gpus" -- plan --model llama3-8b --cluster dgx-h100 --gpus 12 --global-batch 8
expect 2 "bad collective" -- comm --cluster dgx-h100 --nodes 8 --collective allreduce2 --size 1GiB --ranks 8
# Data goes to stdout only: the JSON document starts with '{' and holds the 1F1B makespan.
expect 0 "worksheet help" -- worksheet --help
expect 0 "worksheet template" -- worksheet template
tmpl=$(mktemp --suffix=.md); "$bin" worksheet template -o "$tmpl"
expect 0 "blank worksheet checks" -- worksheet check "$tmpl" --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8
rm -f "$tmpl"
expect 0 "worksheet check help" -- worksheet check --help
expect 0 "explain help" -- explain --help
expect 0 "scenarios help" -- scenarios --help
# One rule for the GPU count in every command (docs/cli.md): without --gpus or --nodes, one node.
expect 0 "worksheet on one node without a GPU count" -- worksheet --model llama3-8b --cluster dgx-h100 --global-batch 64
expect 2 "worksheet gpus not a node multiple" -- worksheet --model llama3-8b --cluster dgx-h100 --gpus 12 --global-batch 64
expect 2 "worksheet check without file" -- worksheet check --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8
expect 1 "worksheet check missing file" -- worksheet check /nonexistent/sheet.md --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8
expect 2 "explain without batch" -- explain --model llama3-8b --cluster dgx-h100 --nodes 1
expect 2 "explain bad export" -- explain --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8 --export yaml
expect 2 "explain csv without pipeline" -- explain --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8 --tp 8 --pp 1 --export pytorch-csv
expect 2 "unknown scenario" -- scenarios nope
expect 0 "explain runs" -- explain --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8 --tp 8
# Our own usage errors (issue 12): the flag named, the nearest known one suggested, one line.
err=$("$bin" schedule --scheduel 1f1b 2>&1 >/dev/null); rc=$?
if [ "$rc" = 2 ] && [ "$err" = "infralens schedule: error: unknown flag --scheduel; did you mean --schedule? (see infralens schedule --help)" ]; then
  pass=$((pass+1))
else
  echo "FAIL: a misspelt flag: exit $rc: $err"; fail=$((fail+1))
fi
expect 2 "flag without its value" -- schedule --pp
expect 2 "stray argument" -- compare extra
expect 0 "short flag with its value attached" -- schedule -m8 --pp 4
# A layout option given to a search restricts it, and the output says so (issue 12).
out=$("$bin" plan --model llama3-8b --cluster dgx-h100 --gpus 16 --global-batch 128 --seq 4096 --zero 1 --micro-batch 2 2>/dev/null)
if grep -q "searched only: zero=1, micro-batch 2" <<<"$out" && ! grep -q "zero=3\|mb=1 " <<<"$out"; then
  pass=$((pass+1))
else
  echo "FAIL: plan --zero 1 --micro-batch 2 should search only those"; fail=$((fail+1))
fi
# validate: the built-in runs from any folder; a malformed row fails the file naming line and column.
( cd / && "$bin" validate >/dev/null 2>&1 ) && pass=$((pass+1)) || { echo "FAIL: validate from / should use the built-in runs"; fail=$((fail+1)); }
badcsv=$(mktemp --suffix=.csv)
printf 'source,model,layers,hidden,heads,ffn_hidden,vocab,seq_len,gpu,cluster,num_gpus,tp,pp,dp,global_batch,measured_step_time_s\nx,m,2,64,4,256,256,128,Z100,dgx-h100,8,1,1,8,8,1.0\n' > "$badcsv"
err=$("$bin" validate --published "$badcsv" 2>&1 >/dev/null); rc=$?
if [ "$rc" = 1 ] && grep -q "line 2: column gpu 'Z100'" <<<"$err"; then pass=$((pass+1)); else echo "FAIL: a bad row should exit 1 naming line 2 and gpu (exit $rc: $err)"; fail=$((fail+1)); fi
rm -f "$badcsv"
# Issue 13: no argument can exhaust memory or print a non-finite number; refused before any work.
expect 2 "schedule json past the document limit" -- schedule -s gpipe --pp 8 -m 2000000 --json
expect 2 "schedule past the action limit" -- schedule -s 1f1b --pp 1024 -m 16000
expect 2 "compare with a million ranks" -- compare --pp 1000000
expect 2 "costs that overflow" -- schedule --f 1e308 --b 1e308
expect 2 "negative cost" -- schedule --f -1
# Output files are written whole or not at all: a failed write leaves the old file as it was and
# no temporary beside it.
tmpd=$(mktemp -d)
echo "previous contents" > "$tmpd/out.json"
( ulimit -f 1; "$bin" schedule --schedule 1f1b --pp 8 -m 64 --json -o "$tmpd/out.json" ) >/dev/null 2>&1
rc=$?
if [ "$rc" = 1 ] && [ "$(cat "$tmpd/out.json")" = "previous contents" ] && [ "$(ls "$tmpd" | wc -l)" = 1 ]; then
  pass=$((pass+1))
else
  echo "FAIL: a write past ulimit -f should exit 1 and leave the old file alone (exit $rc; $(ls "$tmpd"))"; fail=$((fail+1))
fi
"$bin" trace synth --schedule 1f1b --pp 2 -m 2 -o "$tmpd/synth" >/dev/null 2>&1
expect 1 "synth into a non-empty folder" -- trace synth --schedule 1f1b --pp 2 -m 2 -o "$tmpd/synth"
expect 0 "synth --force replaces its own files" -- trace synth --schedule 1f1b --pp 2 -m 2 --force -o "$tmpd/synth"
rm -rf "$tmpd"
out=$("$bin" schedule --schedule 1f1b --pp 4 -m 8 --json 2>/dev/null)
if [ "${out:0:1}" = "{" ] && grep -q '"makespan": 33,' <<<"$out"; then
  pass=$((pass+1))
else
  echo "FAIL: schedule --json should print a JSON object with makespan 33"; fail=$((fail+1))
fi
# Issue 27: a partial layout searches the rest, and says so; contradictions name the flags.
out=$("$bin" plan --model llama3-8b --cluster dgx-h100 --gpus 16 --global-batch 128 --seq 4096 --pp 2 2>/dev/null)
if grep -q "searched only: pp=2" <<<"$out" && ! grep -q " pp=1 \| pp=4 \| pp=8 " <<<"$out"; then
  pass=$((pass+1))
else
  echo "FAIL: plan --pp 2 should rank only pp=2 layouts and say so"; fail=$((fail+1))
fi
err=$("$bin" plan --model llama3-8b --gpus 16 --global-batch 128 --schedule zbv --vpp 4 2>&1 >/dev/null); rc=$?
if [ "$rc" = 2 ] && grep -q "error: --schedule zbv --vpp 4: " <<<"$err"; then pass=$((pass+1)); else echo "FAIL: --schedule zbv --vpp 4 (exit $rc: $err)"; fail=$((fail+1)); fi
expect 1 "a restriction nothing fits" -- plan --model llama3-70b --gpus 16 --global-batch 64 --dp 16 --zero 0
# Our own words for a flag given twice and for a missing --global-batch.
err=$("$bin" plan --model llama3-8b --gpus 16 --global-batch 128 --tp 8 --tp 4 2>&1 >/dev/null); rc=$?
if [ "$rc" = 2 ] && grep -q "error: --tp given twice (8, then 4): give it once" <<<"$err"; then pass=$((pass+1)); else echo "FAIL: --tp twice (exit $rc: $err)"; fail=$((fail+1)); fi
err=$("$bin" plan --model llama3-8b --gpus 16 2>&1 >/dev/null); rc=$?
if [ "$rc" = 2 ] && grep -q "error: --global-batch: required" <<<"$err"; then pass=$((pass+1)); else echo "FAIL: missing --global-batch (exit $rc: $err)"; fail=$((fail+1)); fi
expect 2 "fp16 is not modelled" -- memory --model llama3-8b --tp 8 --precision fp16
# A subcommand group alone is a usage error, as infralens alone: help on stderr, exit 2.
trace_out=$("$bin" trace 2>/dev/null); rc=$?
if [ "$rc" = 2 ] && [ -z "$trace_out" ]; then pass=$((pass+1)); else echo "FAIL: infralens trace alone should exit 2 with nothing on stdout (exit $rc)"; fail=$((fail+1)); fi
# One format name: comm's plain text is `table`, `text` its alias.
if [ "$("$bin" comm --cluster dgx-h100 --nodes 1 --ranks 8 --format text)" = "$("$bin" comm --cluster dgx-h100 --nodes 1 --ranks 8 --format table)" ]; then pass=$((pass+1)); else echo "FAIL: comm --format text should be --format table"; fail=$((fail+1)); fi
# A malformed input file is a failure (1) like a missing one; `-` reads stdin.
tmpd=$(mktemp -d)
printf 'not a worksheet\n' > "$tmpd/bad.md"
expect 1 "malformed worksheet" -- worksheet check "$tmpd/bad.md" --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8
rm -rf "$tmpd"
"$bin" worksheet template | "$bin" worksheet check - --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8 >/dev/null 2>&1 \
  && pass=$((pass+1)) || { echo "FAIL: worksheet check - should read stdin"; fail=$((fail+1)); }
"$bin" topology --cluster dgx-h100 --format toml | "$bin" plan --model llama3-8b --cluster - --global-batch 64 >/dev/null 2>&1 \
  && pass=$((pass+1)) || { echo "FAIL: --cluster - should read a topology file from stdin"; fail=$((fail+1)); }
# Issue 27: `-` reads stdin wherever a file is read, the same as the file itself (the path echoed
# and the search's wall time aside); twice on one command line is a usage error (exit 2).
tmpd=$(mktemp -d)
repo="$(dirname "$(dirname "$(realpath "$0")")")"
printf 'gpu,quantity,precision,value,source\n*,gemm,,0.6,test\n' > "$tmpd/eff.csv"
printf 'stage,f,b,i,w,fb\n0,1,2,1,1,3\n1,1,2,1,1,3\n' > "$tmpd/costs.csv"
# Qwen2-7B's config.json fields: max_position_embeddings 131072 is its context limit.
printf '%s\n' '{"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,' \
  '"num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,' \
  '"vocab_size": 152064, "max_position_embeddings": 131072, "tie_word_embeddings": false}' \
  > "$tmpd/config.json"
"$bin" schedule --schedule 1f1b --pp 2 -m 4 --format csv > "$tmpd/sched.csv"
"$bin" schedule --schedule 1f1b --pp 2 -m 2 --json > "$tmpd/pred.json"
"$bin" topology --cluster dgx-h100 --format toml > "$tmpd/cluster.toml"
"$bin" worksheet template > "$tmpd/sheet.md"
"$bin" trace synth --schedule 1f1b --pp 2 -m 2 -o "$tmpd/synth" >/dev/null
"$bin" trace synth --record-shapes --tp 2 -o "$tmpd/shapes" >/dev/null
"$bin" trace summarize "$tmpd/synth/rank0.json" -o "$tmpd/rank0.summary.json"
gzip -c "$tmpd/synth/rank0.json" > "$tmpd/rank0.json.gz"
stdin_same() {  # stdin_same DESC FILE ARGS... (@ in ARGS: the file, then -)
  local desc="$1" file="$2"; shift 2
  local a=() b=() x
  for x in "$@"; do a+=("${x//@/$file}"); b+=("${x//@/-}"); done
  local norm="s#$file#-#g; s#- (stdin)#-#g; s# in [0-9.]* s# in T s#"
  local o1 o2 r1 r2
  o1=$("$bin" "${a[@]}" 2>/dev/null | sed "$norm"); r1=${PIPESTATUS[0]}
  o2=$("$bin" "${b[@]}" <"$file" 2>/dev/null | sed "$norm"); r2=${PIPESTATUS[0]}
  if [ "$r1" = 0 ] && [ "$r2" = 0 ] && [ -n "$o1" ] && [ "$o1" = "$o2" ]; then
    pass=$((pass+1))
  else
    echo "FAIL: $desc: - should read stdin as the file is read (exit $r1 / $r2)"; fail=$((fail+1))
  fi
}
stdin_same "--efficiency -" "$tmpd/eff.csv" plan --model llama3-8b --gpus 8 --global-batch 8 --efficiency @
stdin_same "--stage-costs -" "$tmpd/costs.csv" schedule --schedule 1f1b --pp 2 -m 4 --stage-costs @
stdin_same "schedule --load -" "$tmpd/sched.csv" schedule --load @
stdin_same "validate --published -" "$repo/data/published/calibration.csv" validate --published @
stdin_same "plan --from-megatron -" "$repo/tests/data/megatron_llama3_8b_fp8.sh" plan --from-megatron @ --cluster dgx-h100 --nodes 8
stdin_same "--cluster -" "$tmpd/cluster.toml" memory --model llama3-8b --cluster @ --tp 8
stdin_same "--model - (a config.json)" "$tmpd/config.json" memory --model @ --cluster dgx-h100 --tp 4
stdin_same "model -" "$tmpd/config.json" model @ --json
stdin_same "worksheet check -" "$tmpd/sheet.md" worksheet check @ --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8
stdin_same "trace compare - (the prediction)" "$tmpd/pred.json" trace compare @ "$tmpd/synth"
stdin_same "trace compare PRED - (a trace)" "$tmpd/synth/rank0.json" trace compare "$tmpd/pred.json" @
stdin_same "trace analyze -" "$tmpd/synth/rank0.json" trace analyze @ --json
stdin_same "trace analyze - (gzip)" "$tmpd/rank0.json.gz" trace analyze @
stdin_same "trace summarize -" "$tmpd/synth/rank0.json" trace summarize @
stdin_same "trace merge -" "$tmpd/synth/rank0.json" trace merge @
stdin_same "trace analyze --summaries -" "$tmpd/rank0.summary.json" trace analyze --summaries @
stdin_same "trace calibrate -" "$tmpd/shapes/rank0.json" trace calibrate @ --gpu H100-SXM
expect 2 "- for two inputs" -- plan --model - --cluster - --gpus 8 --global-batch 8
expect 2 "- for two inputs (--flag=- form)" -- memory --model=- --cluster=- --tp 8
expect 2 "- twice among the traces" -- trace analyze - -
expect 2 "--memory-limit below 64 MiB" -- trace analyze "$tmpd/synth" --memory-limit 10
expect 0 "--memory-limit 64 holds a small trace" -- trace analyze "$tmpd/synth" --memory-limit 64
expect 2 "--memory-limit on summarize" -- trace summarize "$tmpd/synth/rank0.json" --memory-limit 0
expect 2 "trace compare - -" -- trace compare - -
expect 2 "trace synth -o -: a folder, not a stream" -- trace synth --schedule 1f1b --pp 2 -m 2 -o -
"$bin" worksheet check - --model llama3-8b --cluster dgx-h100 --nodes 1 --global-batch 8 -o - <"$tmpd/sheet.md" >/dev/null 2>&1 \
  && pass=$((pass+1)) || { echo "FAIL: -o - is stdout, not a second input"; fail=$((fail+1)); }
# Issue 27: a config.json's max_position_embeddings is the context limit: the default sequence is
# it capped at 4096 (docs/models.md), said in the model's source; --seq overrides it.
out=$("$bin" model --model "$tmpd/config.json" 2>/dev/null)
if grep -q "seq 4096," <<<"$out" && grep -q "context limit 131072 capped at 4096" <<<"$out" \
   && grep -q "per step = global batch 1 x 4096 tokens" <<<"$out"; then
  pass=$((pass+1))
else
  echo "FAIL: a config.json's default sequence should be its context limit capped at 4096"; fail=$((fail+1))
fi
if "$bin" model --model "$tmpd/config.json" --seq 32768 2>/dev/null | grep -q "global batch 1 x 32768 tokens"; then
  pass=$((pass+1))
else
  echo "FAIL: --seq should override a config.json's default sequence"; fail=$((fail+1))
fi
rm -rf "$tmpd"
# Issue 26: an efficiency or a file that would make a time overflow is blamed on itself (never on
# the simulator's --f or --p2p it turned into); a FIFO is refused at once; a bad config.json is a
# failure of the file (exit 1) in `model` as in every command.
tmpd=$(mktemp -d)
printf 'gpu,quantity,precision,value,source\nH100-SXM,hbm,,1e-300,x\n' > "$tmpd/tiny.csv"
err=$("$bin" plan --model llama3-8b --nodes 2 --global-batch 16 --tp 8 --efficiency "$tmpd/tiny.csv" 2>&1 >/dev/null); rc=$?
if [ "$rc" = 1 ] && grep -q "column value: hbm '1e-300': expected a number in \[0.001, 1\]" <<<"$err"; then pass=$((pass+1)); else echo "FAIL: hbm 1e-300 should be refused naming hbm (exit $rc: $err)"; fail=$((fail+1)); fi
printf 'gpu,quantity,precision,value,source\nH100-SXM,attention,,0.001,x\n' > "$tmpd/slow.csv"
err=$("$bin" plan --model gpt-1t --gpus 8 --tp 8 --pp 1 --global-batch 8 --seq 1000000 --efficiency "$tmpd/slow.csv" 2>&1 >/dev/null); rc=$?
if [ "$rc" = 2 ] && grep -q "error: --efficiency: attention 0.001 for H100-SXM (built in: 0.48) gives a compute time of" <<<"$err" && ! grep -q -- "--f " <<<"$err"; then pass=$((pass+1)); else echo "FAIL: a stage time past the simulator's range should name the efficiency (exit $rc: $err)"; fail=$((fail+1)); fi
mkfifo "$tmpd/fifo.json"
for args in "model --model $tmpd/fifo.json" "memory --model $tmpd/fifo.json --tp 8" "trace analyze $tmpd/fifo.json" \
            "plan --model llama3-8b --gpus 8 --global-batch 8 --efficiency $tmpd/fifo.json" \
            "worksheet check $tmpd/fifo.json --model llama3-8b --global-batch 8" "schedule --load $tmpd/fifo.json"; do
  # shellcheck disable=SC2086
  err=$(timeout 20 "$bin" $args 2>&1 >/dev/null); rc=$?
  if [ "$rc" = 1 ] && grep -q "fifo.json: is a FIFO, not a regular file" <<<"$err" && [ "$(wc -l <<<"$err")" = 1 ]; then pass=$((pass+1)); else echo "FAIL: $args: a FIFO should be refused at once (exit $rc: $err)"; fail=$((fail+1)); fi
done
printf '{"hidden_size": 64}\n' > "$tmpd/bad.json"
expect 1 "model --model with a malformed config.json" -- model --model "$tmpd/bad.json"
rm -rf "$tmpd"
# Issue 27: one rule for the GPU count: a topology file's `nodes` counts in every command that
# places a job, without --gpus or --nodes (2 nodes of 8 here: 16 GPUs).
tmpd=$(mktemp -d)
printf 'base = "dgx-h100"\nnodes = 2\n' > "$tmpd/two.toml"
for args in "plan --global-batch 64" "explain --global-batch 64" "worksheet --global-batch 64" \
            "memory --tp 8" "comm-plan --tp 8 --global-batch 64"; do
  # shellcheck disable=SC2086
  out=$("$bin" $args --model llama3-8b --cluster "$tmpd/two.toml" 2>&1 | head -1); rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ] && grep -q "16 x H100-SXM\|16 GPUs\|2 nodes x 8 GPUs" <<<"$out"; then pass=$((pass+1)); else echo "FAIL: $args: the topology file's 2 nodes should give 16 GPUs (exit $rc: $out)"; fail=$((fail+1)); fi
done
# A quote never closed is reported on the line where it opens, within the file (issue 27).
printf 'source,model\nx,y\n"abc,def\n' > "$tmpd/quote.csv"
err=$("$bin" validate --published "$tmpd/quote.csv" 2>&1 >/dev/null); rc=$?
if [ "$rc" = 1 ] && grep -q "quote.csv: line 3: a quoted field opened here is never closed" <<<"$err"; then pass=$((pass+1)); else echo "FAIL: an unterminated quote should name line 3 (exit $rc: $err)"; fail=$((fail+1)); fi
rm -rf "$tmpd"
# Issue 27: work over a second shows progress on a terminal's stderr, and nowhere else (a pipe,
# NO_COLOR). The input arrives after 1.6 s on a pipe, so the command surely runs over a second;
# `script` gives it a terminal for stderr.
tmpd=$(mktemp -d)
"$bin" trace synth --schedule 1f1b --pp 2 -m 2 -o "$tmpd/synth" >/dev/null
tty_err=$(env -u NO_COLOR script -qec "(sleep 1.6; cat '$tmpd/synth/rank0.json') | '$bin' trace analyze - >/dev/null" /dev/null)
no_color=$(NO_COLOR=1 script -qec "(sleep 1.6; cat '$tmpd/synth/rank0.json') | '$bin' trace analyze - >/dev/null" /dev/null)
piped=$( (sleep 1.6; cat "$tmpd/synth/rank0.json") | "$bin" trace analyze - 2>&1 >/dev/null)
if grep -q "infralens trace: working, 1 s" <<<"$tty_err" && [ -z "$no_color" ] && [ -z "$piped" ]; then
  pass=$((pass+1))
else
  echo "FAIL: progress only on a terminal's stderr (tty: '$tty_err', NO_COLOR: '$no_color', pipe: '$piped')"; fail=$((fail+1))
fi
rm -rf "$tmpd"
# Issue 26: an error quoting a huge argument stays short (the API's bound, base/strings.h).
big=$(head -c 100000 /dev/zero | tr '\0' z)
err=$("$bin" schedule --schedule "$big" 2>&1 >/dev/null); rc=$?
if [ "$rc" = 2 ] && [ "${#err}" -lt 1200 ] && grep -q "bytes in all)$" <<<"$err"; then pass=$((pass+1)); else echo "FAIL: an error quoting a 100 KB argument should be bounded (exit $rc, ${#err} bytes)"; fail=$((fail+1)); fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
