#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists every command-line flag that Megatron-LM's megatron/training/arguments.py defines.

    python3 tools/megatron_flags.py path/to/arguments.py [COMMIT] > tests/data/megatron_arguments_flags.txt

Reads the file as text (no import: arguments.py needs torch and megatron.core): every
add_argument( call, its leading option strings ('--a', "--b"), on the call's first line or
the next ones, and for action=argparse.BooleanOptionalAction the --no- form argparse adds.
Prints them sorted, one per line, after a header naming the file's commit.
"""
import re
import sys

CALL = re.compile(r"add_argument\(\s*((?:(?:'--[^']+'|\"--[^\"]+\")\s*,?\s*)+)")
OPTION = re.compile(r"'(--[^']+)'|\"(--[^\"]+)\"")


def flags(text):
    found = set()
    for match in CALL.finditer(text):
        names = [a or b for a, b in OPTION.findall(match.group(1))]
        found.update(names)
        # The rest of this call: up to the next add_argument( (enough to see its action).
        end = text.find("add_argument(", match.end())
        rest = text[match.end(): end if end >= 0 else len(text)]
        if "BooleanOptionalAction" in rest:
            found.update("--no-" + n[2:] for n in names)
    return sorted(found)


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: megatron_flags.py ARGUMENTS_PY [COMMIT]\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        names = flags(f.read())
    commit = argv[2] if len(argv) == 3 else "unknown"
    print("# Every flag of megatron/training/arguments.py, NVIDIA/Megatron-LM commit " + commit)
    print("# (tools/megatron_flags.py; BooleanOptionalAction flags with their --no- forms)")
    for n in names:
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
