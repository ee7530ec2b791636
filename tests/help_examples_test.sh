#!/usr/bin/env bash
# Help that tells the truth: every example in every command's and subcommand's --help, and every
# `infralens ...` line in the code blocks of README.md and docs/*.md, is extracted here (never
# copied) and run; each must exit 0. The files the examples name (traces, a prediction, a
# config.json, a topology file, a published-runs CSV) are made first, by the binary itself where it
# can (trace synth, schedule --json, topology --format toml, worksheet template). Each help's
# examples run in order in a fresh copy of those files, as a user would type them; each document's
# code blocks likewise. Skipped, and counted: `serve` (it runs until stopped) and lines with `...`
# (elided flags).
#   tests/help_examples_test.sh build/infralens README.md [DOC.md...]   (default: README.md's docs/*.md)
set -u
bin="$(realpath "$1")"
shift
docs=()
for d in "$@"; do docs+=("$(realpath "$d")"); done
root="$(dirname "${docs[0]}")"  # the repository (README.md's folder)
# README.md alone: its docs/ beside it too.
if [ ${#docs[@]} = 1 ]; then
  for d in "$root"/docs/*.md; do docs+=("$d"); done
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pass=0 fail=0 skip=0

skip_re='\.\.\.| serve( |$)'

# The files examples name, made once in $work/files.
mkdir -p "$work/files" && cd "$work/files" || exit 1
{
  # A pipeline trace set with shapes, naming its GPU as a real trace does (deviceProperties):
  # analyze, compare, merge and calibrate all read it.
  "$bin" trace synth --schedule 1f1b --pp 4 -m 8 --record-shapes -o traces &&
    for f in traces/*.json; do
      sed -i '0,/{/s//{"deviceProperties":[{"id":0,"name":"NVIDIA A100-SXM4-80GB","totalGlobalMem":85899345920,"computeMajor":8,"computeMinor":0}],/' "$f"
    done &&
    # Per-rank summaries of that set (docs/scale-out.md merges them with --summaries).
    mkdir -p summaries && for f in traces/*.json; do
      "$bin" trace summarize "$f" -o "summaries/$(basename "$f")" || exit 1
    done &&
    "$bin" trace synth --schedule 1f1b --pp 2 -m 4 --gzip -o gz && mv gz/rank0.json.gz gz/rank1.json.gz . &&
    "$bin" schedule --schedule 1f1b --pp 4 -m 8 --json > predicted.json &&
    "$bin" topology --cluster dgx-h100 --format toml > my-cluster.toml &&
    cp "$root/data/published/calibration.csv" runs.csv &&
    "$bin" worksheet template > my-design.md &&
    mkdir -p path/to &&
    # A Llama-style Hugging Face config (the shape of Llama 3 8B's config.json).
    cat > path/to/config.json <<'EOF'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
 "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
 "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
 "hidden_act": "silu", "rms_norm_eps": 1e-05, "tie_word_embeddings": false}
EOF
} >/dev/null 2>"$work/fixtures.err" || { echo "FAIL: making the example files: $(head -c 300 "$work/fixtures.err")"; exit 1; }

fresh() {  # a fresh copy of the files to run one help's or one document's examples in
  rm -rf "$work/run" && cp -r "$work/files" "$work/run" && cd "$work/run" || exit 1
}

run() {  # run SOURCE COMMAND-LINE
  local src="$1" line="$2"
  line="${line%%  #*}"           # a trailing comment
  line="${line%"${line##*[! ]}"}"  # trailing spaces
  if [[ "$line" =~ $skip_re ]]; then
    skip=$((skip+1))
    return
  fi
  local args="${line#infralens }"
  if (eval "\"$bin\" $args" >/dev/null 2>"$work/err"); then
    pass=$((pass+1))
  else
    echo "FAIL ($src): $line: $(head -c 300 "$work/err")"
    fail=$((fail+1))
  fi
}

examples() {  # the lines under "examples:" of one --help
  awk '/^examples:/{on=1; next} on && /^  infralens /{sub(/^  /, ""); print} on && /^[a-z]/{exit}'
}

# Every command's --help, and every subcommand's (the group's help lists them under
# "subcommands:"; `worksheet` names its two in its usage).
commands=$("$bin" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
for c in $commands; do
  helps=("$c")
  subs=$("$bin" $c --help | awk '/^subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
  for s in $subs; do helps+=("$c $s"); done
  [ "$c" = worksheet ] && helps+=("worksheet check" "worksheet template")
  for h in "${helps[@]}"; do
    "$bin" $h --help >"$work/help" 2>&1 || { echo "FAIL: infralens $h --help exits non-zero"; fail=$((fail+1)); }
    fresh
    while IFS= read -r ex; do
      run "$h --help" "$ex"
    done < <(examples <"$work/help")
    # --version on every command.
    if [ "$("$bin" $h --version 2>&1)" = "$("$bin" --version)" ]; then
      pass=$((pass+1))
    else
      echo "FAIL: infralens $h --version"; fail=$((fail+1))
    fi
  done
done
# A group's own help lists examples too.
fresh
while IFS= read -r ex; do run "trace --help" "$ex"; done < <("$bin" trace --help | examples)

# The documents: lines in ``` blocks that start with `infralens `, with `\` continuations joined,
# run in order (a later line reads what an earlier one wrote).
for doc in "${docs[@]}"; do
  fresh
  name="${doc#"$root"/}"
  while IFS= read -r ex; do
    run "$name" "$ex"
  done < <(awk '/^```/{inblock=!inblock; next} inblock{print}' "$doc" |
           sed -e ':a' -e '/\\$/N; s/\\\n[ ]*/ /; ta' | grep '^infralens ')
done

echo "help and document examples: $skip skipped (serve, or elided with ...)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
