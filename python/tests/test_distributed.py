"""Trace analysis in two steps, and on Dask: summaries merged equal `infralens trace analyze`.

A LocalCluster of two worker processes over loopback analyses a 64-rank synthetic trace folder;
the result equals the CLI's JSON, also when a worker is killed while tasks run on it (the
scheduler runs its tasks again elsewhere; its nanny starts a new worker).
"""

import json
import logging
import os
import signal
import subprocess
import threading
import time

import pytest
from distributed import Client, LocalCluster

import infralens
import infralens.distributed
from infralens import InfraLensError

BIN = os.environ.get("INFRALENS_BIN", "build/infralens")


def cli_json(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def synth64(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth64")
    subprocess.run([BIN, "trace", "synth", "--schedule", "1f1b", "--pp", "64", "-m", "64", "-o",
                    str(d)],
                   check=True, capture_output=True, timeout=300)
    return d


@pytest.fixture(scope="module")
def expected(synth64):
    return cli_json("trace", "analyze", str(synth64), "--json")


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None,
                           silence_logs=logging.CRITICAL)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_summaries_merged_equal_cli_and_module(synth64, expected, tmp_path):
    files = sorted(str(p) for p in synth64.iterdir())
    summaries = [infralens.trace.summarize(f) for f in files]
    assert all(json.loads(s)["format"] == "infralens-trace-summary" for s in summaries)
    assert infralens.trace.analyze_summaries(summaries) == expected
    hta = [infralens.trace.summarize(f, hta_compat=True) for f in files[:8]]
    assert infralens.trace.analyze_summaries(hta, align_clocks=True) == cli_json(
        "trace", "analyze", *files[:8], "--hta-compat", "--align-clocks", "--json")
    # The CLI's two steps: one summary file per rank, merged from their folder.
    out = tmp_path / "summaries"
    out.mkdir()
    for i, f in enumerate(files[:4]):
        subprocess.run([BIN, "trace", "summarize", f, "-o", str(out / f"s{i}.json")],
                       check=True, timeout=60)
    assert cli_json("trace", "analyze", "--summaries", str(out), "--json") == cli_json(
        "trace", "analyze", *files[:4], "--json")


def test_dask_local_cluster_equals_cli(client, synth64, expected):
    assert infralens.distributed.analyze(synth64, client) == expected


def test_dask_worker_killed_mid_run_is_retried(client, synth64, expected):
    pids = client.run(os.getpid)  # worker address -> process id
    done = {}

    def run():
        done["result"] = infralens.distributed.analyze(synth64, client, align_clocks=False)

    t = threading.Thread(target=run)
    t.start()
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and t.is_alive():
        busy = [w for w, keys in client.processing().items() if keys and w in pids]
        victim = busy[0] if busy else None
        if victim is None:
            time.sleep(0.002)
    assert victim is not None, "no task was seen running"
    os.kill(pids[victim], signal.SIGKILL)
    killed_mid_run = t.is_alive()
    t.join(240)
    assert not t.is_alive()
    assert killed_mid_run, "the analysis ended before the worker was killed"
    assert done["result"] == expected


def test_summary_errors():
    with pytest.raises(InfraLensError) as e:
        infralens.trace.analyze_summaries(['{"format": "something else"}'])
    assert "not a trace summary" in e.value.message
    with pytest.raises(InfraLensError):
        infralens.trace.summarize("x.json", comm_kernels="(")
