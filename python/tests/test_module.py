"""`import infralens` against the CLI: the same request gives the same JSON.

Run by ctest (python_module) with PYTHONPATH=<build>/python and INFRALENS_BIN=<build>/infralens;
by hand: PYTHONPATH=build/python INFRALENS_BIN=build/infralens /usr/bin/python3 -m pytest python/tests
"""

import ast
import json
import os
import subprocess
import sys

import pytest

import infralens
from infralens import InfraLensError

BIN = os.environ.get("INFRALENS_BIN", "build/infralens")


def cli_json(*args):
    """`infralens ARGS` (which must print JSON) parsed; fails the test on a non-zero exit."""
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def untimed(doc):
    """The document without wall-clock times ("wall_s": how long the search ran), which differ
    between any two runs."""
    if isinstance(doc, dict):
        return {k: untimed(v) for k, v in doc.items() if k != "wall_s"}
    if isinstance(doc, list):
        return [untimed(v) for v in doc]
    return doc


JOB = dict(model="llama3-8b", cluster="dgx-h100", gpus=8, global_batch=32)
JOB_FLAGS = ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--global-batch", "32"]


def test_plan_search_equals_cli():
    r = infralens.plan(**JOB, top=5)
    assert untimed(r) == untimed(cli_json("plan", *JOB_FLAGS, "--top", "5", "--json"))
    frame = r.to_frame()
    assert len(frame) == len(r["plans"]) > 0
    assert list(frame["layout"]) == [p["layout"] for p in r["plans"]]


def test_plan_one_layout_equals_cli():
    r = infralens.plan(**JOB, tp=2, pp=2)
    assert untimed(r) == untimed(cli_json("plan", *JOB_FLAGS, "--tp", "2", "--pp", "2", "--json"))
    # One layout: the frame is its memory per pipeline rank.
    assert len(r.to_frame()) == 2


def test_memory_equals_cli():
    r = infralens.memory(model="llama3-8b", cluster="dgx-h100", tp=2, pp=4, global_batch=32)
    assert r == cli_json("memory", "--model", "llama3-8b", "--cluster", "dgx-h100", "--tp", "2",
                         "--pp", "4", "--global-batch", "32", "--json")
    assert len(r.to_frame()) == 4  # one row per pipeline rank


def test_schedule_equals_cli_and_closed_form():
    r = infralens.schedule(schedule="1f1b", pp=4, microbatches=8, f=1, b=2)
    assert r == cli_json("schedule", "--schedule", "1f1b", "--pp", "4", "-m", "8", "--f", "1",
                         "--b", "2", "--json")
    # 1F1B without communication: (m + p - 1)(f + b) = 11 x 3 (Narayanan et al. 2021, sec. 2.2).
    assert r["makespan"] == pytest.approx(33)
    frame = r.to_frame()
    assert len(frame) == 4 * 8 * 2  # a forward and a backward per stage and microbatch


def test_comm_and_comm_plan_equal_cli():
    r = infralens.comm(cluster="dgx-h100", gpus=16, collective="all_reduce", size="1GiB")
    assert r == cli_json("comm", "--cluster", "dgx-h100", "--gpus", "16", "--collective",
                         "all_reduce", "--size", "1GiB", "--json")
    assert len(r.to_frame()) == len(r["candidates"]) > 0
    cp = infralens.comm_plan(**JOB, tp=2, pp=2)
    assert cp == cli_json("comm-plan", *JOB_FLAGS, "--tp", "2", "--pp", "2", "--json")
    assert len(cp.to_frame()) == len(cp["items"]) > 0


def test_export_content_equals_cli_file(tmp_path):
    r = infralens.export(**JOB, tp=2, pp=2, format="megatron")
    out = tmp_path / "run.sh"
    subprocess.run([BIN, "plan", *JOB_FLAGS, "--tp", "2", "--pp", "2", "--export", "megatron",
                    "-o", str(out)], check=True, capture_output=True, timeout=120)
    assert r["content"] == out.read_text()


def test_validate_equals_cli():
    r = infralens.validate()
    assert r == cli_json("validate", "--json")
    assert len(r.to_frame()) == len(r["rows"]) > 0


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    subprocess.run([BIN, "trace", "synth", "--schedule", "1f1b", "--pp", "4", "-m", "8", "-o",
                    str(d)], check=True, capture_output=True, timeout=120)
    return d


def test_trace_analyze_equals_cli(synth):
    r = infralens.trace.analyze(synth)
    assert r == cli_json("trace", "analyze", str(synth), "--json")
    assert len(r.to_frame()) == 4
    assert set(r.to_frame("collectives")["rank"]) <= {0, 1, 2, 3}
    files = sorted(str(p) for p in synth.iterdir())
    assert infralens.trace.analyze(files, hta_compat=True) == cli_json(
        "trace", "analyze", *files, "--hta-compat", "--json")


def test_trace_calibrate_equals_cli(tmp_path):
    subprocess.run([BIN, "trace", "synth", "--record-shapes", "--tp", "2", "-o", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    r = infralens.trace.calibrate(tmp_path, gpu="H100-SXM")
    assert r == cli_json("trace", "calibrate", str(tmp_path), "--gpu", "H100-SXM", "--format",
                         "json")


def test_errors_name_the_parameter():
    with pytest.raises(InfraLensError) as e:
        infralens.plan(model="llama3-8b", cluster="dgx-h100", gpus=8, global_batch=0)
    assert e.value.parameter == "global_batch" and e.value.status == 400
    with pytest.raises(InfraLensError) as e:
        infralens.memory(model="llama3-8b", no_such_thing=1)
    assert e.value.parameter == "no_such_thing"
    with pytest.raises(InfraLensError) as e:
        infralens.plan(model="no-such-model", cluster="dgx-h100", gpus=8, global_batch=32)
    assert e.value.parameter == "model"
    with pytest.raises(InfraLensError) as e:
        infralens.trace.analyze("/nonexistent/traces")
    assert e.value.status == 1 and "/nonexistent/traces" in e.value.message
    with pytest.raises(InfraLensError) as e:
        infralens.schedule(schedule="1f1b", pp=4, microbatches=8).to_frame("nope")
    assert e.value.parameter == "table"


def test_docstrings_list_the_api_parameters():
    names = {p["name"] for p in infralens.parameters("plan")}
    assert {"model", "cluster", "gpus", "global_batch", "tp", "top"} <= names
    for n in names:
        assert f"    {n}: " in infralens.plan.__doc__


def test_stub_lists_every_parameter():
    """Each function of the stub takes exactly its parameters, as keyword arguments typed by a
    TypedDict (`**kwargs: Unpack[...]`) whose bases are the groups of shared parameters."""
    stub = os.path.join(os.path.dirname(infralens.__file__), "__init__.pyi")
    tree = ast.parse(open(stub).read())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def fields(name):
        c = classes[name]
        own = [s.target.id for s in c.body if isinstance(s, ast.AnnAssign)]
        inherited = [f for b in c.bases if isinstance(b, ast.Name) and b.id != "TypedDict"
                     for f in fields(b.id)]
        return inherited + own

    for fn in ("plan", "memory", "schedule", "comm", "comm_plan", "export"):
        kwargs = functions[fn].args.kwarg.annotation
        assert ast.unparse(kwargs.value) == "Unpack", fn
        declared = fields(kwargs.slice.id)
        assert len(declared) == len(set(declared)), (fn, declared)
        assert set(declared) == {p["name"] for p in infralens.parameters(fn)}, fn


def test_done_means_command():
    env = dict(os.environ)
    code = ("import infralens; print(infralens.plan(model='llama3-70b', cluster='dgx-h100', "
            "gpus=64, global_batch=512))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "'plans': [{" in p.stdout


def test_readme_and_docs_examples_run(capsys):
    """The ```python blocks of README.md run as they are (the docs' notebook example reads a
    trace folder a user brings, and writes a file: not run)."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    text = open(os.path.join(root, "README.md")).read()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert blocks
    for b in blocks:
        exec(compile(b, "README.md", "exec"), {})
    assert "global_batch ->" in capsys.readouterr().out
