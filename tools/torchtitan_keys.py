#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists every TOML key that torchtitan's JobConfig accepts (torchtitan/config/job_config.py).

    git -C torchtitan show v0.2.2:torchtitan/config/job_config.py > /tmp/job_config.py
    python3 tools/torchtitan_keys.py /tmp/job_config.py v0.2.2 > tests/data/torchtitan_job_config_keys.txt

Reads the file with Python's ast (no import: it needs torch): the dataclasses, their annotated
fields, and for a field whose type is another dataclass of the file (field(default_factory=X)
or an annotation naming X) its keys under "<section>.<field>". Prints one dotted key per line,
sorted, from the JobConfig root, after a header naming the version. torchtitan's ConfigManager
refuses a TOML key that is not one of these (its strict dataclass parse).
"""
import ast
import sys


def dataclasses(tree):
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            fields = []
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    fields.append((item.target.id, item.annotation, item.value))
            found[node.name] = fields
    return found


def nested_class(annotation, value, classes):
    if isinstance(annotation, ast.Name) and annotation.id in classes:
        return annotation.id
    if isinstance(value, ast.Call):
        for kw in value.keywords:
            if kw.arg == "default_factory" and isinstance(kw.value, ast.Name):
                if kw.value.id in classes:
                    return kw.value.id
    return None


def keys(classes, name, prefix, depth=0):
    out = []
    for field, annotation, value in classes[name]:
        sub = nested_class(annotation, value, classes)
        if sub is not None and depth < 8:
            out.extend(keys(classes, sub, prefix + field + ".", depth + 1))
        else:
            out.append(prefix + field)
    return out


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: torchtitan_keys.py JOB_CONFIG_PY [VERSION]\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        classes = dataclasses(ast.parse(f.read()))
    if "JobConfig" not in classes:
        sys.stderr.write("torchtitan_keys.py: no JobConfig class in %s\n" % argv[1])
        return 1
    version = argv[2] if len(argv) == 3 else "unknown"
    print("# Every key of torchtitan's JobConfig (torchtitan/config/job_config.py), pytorch/torchtitan " + version)
    print("# (tools/torchtitan_keys.py; section.key as the TOML job config spells it)")
    for k in sorted(keys(classes, "JobConfig", "")):
        print(k)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
