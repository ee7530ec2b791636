#!/usr/bin/env bash
# Writes infralens.1 (roff) from the binary's own --help and each command's --help, so the man page
# says exactly what the program says. Run at build time:  packaging/make_man.sh BIN OUT VERSION
set -eu
bin="$1" out="$2" version="$3"
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
{
  echo ".TH INFRALENS 1 \"\" \"infralens $version\" \"User Commands\""
  echo ".SH NAME"
  echo "infralens \\- distributed-training parallelism: pipeline schedules, topology, planner, traces"
  echo ".SH SYNOPSIS"
  echo ".B infralens"
  echo "\\fICOMMAND\\fR [\\fIOPTIONS\\fR]"
  echo ".SH DESCRIPTION"
  echo ".nf"
  "$bin" --help | esc
  echo ".fi"
  for c in $("$bin" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}'); do
    echo ".SH COMMAND: $c"
    echo ".nf"
    "$bin" "$c" --help | esc
    echo ".fi"
  done
  echo ".SH EXIT STATUS"
  echo "0 on success, 1 when the work failed, 2 for a usage error."
  echo ".SH SEE ALSO"
  echo "The documentation under /usr/share/doc/infralens, and \\fBinfralens serve\\fR for the workbench."
} > "$out.tmp"
mv "$out.tmp" "$out"
