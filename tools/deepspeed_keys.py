#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the DeepSpeed config keys the DeepSpeed export may write, from a DeepSpeed checkout.

    python3 tools/deepspeed_keys.py DEEPSPEED_DIR [VERSION] > tests/data/deepspeed_config_keys.txt

Reads as text (no import: DeepSpeed needs torch):
- deepspeed/runtime/constants.py: every NAME = "key" string constant (not *_DEFAULT) is a key
  DeepSpeedConfig reads, top level or inside a section ("bf16" has "enabled");
- deepspeed/runtime/zero/config.py: the section name "zero_optimization" (ZERO_OPTIMIZATION)
  and the fields of DeepSpeedZeroConfig, the pydantic model
  (extra="forbid", config_utils.DeepSpeedConfigModel) that "zero_optimization" is parsed into,
  printed as zero_optimization.<field> (and its alias= spellings).
"""
import ast
import os
import sys


def constants(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name) and not t.id.endswith("_DEFAULT"):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    v = node.value.value
                    if v and all(c.isalnum() or c == "_" for c in v):
                        out.add(v)
    return out


def zero_fields(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "DeepSpeedZeroConfig":
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out.add(item.target.id)
                    if isinstance(item.value, ast.Call):
                        for kw in item.value.keywords:
                            if kw.arg == "alias" and isinstance(kw.value, ast.Constant):
                                out.add(kw.value.value)
    return out


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: deepspeed_keys.py DEEPSPEED_DIR [VERSION]\n")
        return 2
    root = argv[1]
    keys = constants(os.path.join(root, "deepspeed/runtime/constants.py"))
    # The section name itself (ZERO_OPTIMIZATION = "zero_optimization") lives beside the model.
    keys |= {k for k in constants(os.path.join(root, "deepspeed/runtime/zero/config.py"))
             if k == "zero_optimization"}
    zero = zero_fields(os.path.join(root, "deepspeed/runtime/zero/config.py"))
    version = argv[2] if len(argv) == 3 else "unknown"
    print("# DeepSpeed config keys, microsoft/DeepSpeed " + version)
    print("# (tools/deepspeed_keys.py: deepspeed/runtime/constants.py keys, then")
    print("# zero_optimization.<field> of DeepSpeedZeroConfig, which forbids any other)")
    for k in sorted(keys):
        print(k)
    for k in sorted(zero):
        print("zero_optimization." + k)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
