#!/usr/bin/env bash
# Help that tells the truth: every example in every command's --help, and every `infralens ...`
# line in README.md's code blocks, is extracted here (never copied) and run; each must exit 0.
# Skipped, and listed: `serve` (it runs until stopped) and examples that name files a user brings
# (a config.json, a topology .toml, a CSV, a trace folder or design file that only exists on their
# machine), found by the placeholders below.
#   tests/help_examples_test.sh build/infralens README.md
set -u
bin="$(realpath "$1")"
readme="$(realpath "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
pass=0 fail=0 skip=0

# Placeholders for files a user brings; an example naming one is not runnable here.
skip_re='path/to/|my-cluster\.toml|runs\.csv|my\.csv|my-design\.md|FILE|/tmp/synth|/tmp/zbv|\.\.\.| serve( |$)|trace (analyze|compare|merge) |--load '

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

# Every command's --help: the lines under "examples:".
commands=$("$bin" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
for c in $commands; do
  while IFS= read -r ex; do
    run "$c --help" "$ex"
  done < <("$bin" $c --help | awk '/^examples:/{on=1; next} on && /^  infralens /{sub(/^  /, ""); print} on && /^[a-z]/{exit}')
done

# README.md: lines in ``` blocks that start with `infralens `, with `\` continuations joined.
while IFS= read -r ex; do
  run "README.md" "$ex"
done < <(awk '/^```/{inblock=!inblock; next} inblock{print}' "$readme" |
         sed -e ':a' -e '/\\$/N; s/\\\n[ ]*/ /; ta' | grep '^infralens ')

echo "help and README examples: $skip skipped (user files or serve)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
