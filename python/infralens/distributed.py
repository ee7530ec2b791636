"""Trace analysis on a Dask cluster: one task per rank file, merged on the client.

    >>> from dask.distributed import Client
    >>> import infralens.distributed
    >>> client = Client("tcp://scheduler:8786")
    >>> a = infralens.distributed.analyze("/lustre/job42/traces/", client)

Each task runs :func:`infralens.trace.summarize` on one file where a worker can read it (a shared
file system) and returns the summary, a few kB to a few MB of JSON; the client merges them with
:func:`infralens.trace.analyze_summaries`. The result equals ``infralens.trace.analyze`` on the
same files (and ``infralens trace analyze --json``). A task whose worker dies is run again on
another worker by the scheduler; a task that raises is retried ``retries`` times. Workers need
this package importable (the same version as the client's: the summary format is versioned).
See docs/scale-out.md.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from . import _infralens
from .trace import AnalysisResult, analyze_summaries, summarize

__all__ = ["analyze", "summarize_task"]


def summarize_task(path: str, options: dict) -> str:
    """The task a worker runs: one file's summary (JSON text)."""
    return summarize(path, **options)


def analyze(paths: str | os.PathLike | Iterable[str | os.PathLike], client: Any, *,
            hta_compat: bool = False, include_last_step: bool = False,
            align_clocks: bool = False, comm_kernels: str | None = None,
            memory_kernels: str | None = None, retries: int = 2) -> AnalysisResult:
    """``infralens trace analyze PATHS`` with the files summarised as Dask tasks on ``client``.

    Args:
        paths: trace files or folders, as ``trace.analyze`` takes them; expanded on the client
            (the workers must see the same paths).
        client: a ``dask.distributed.Client``.
        hta_compat, include_last_step, align_clocks, comm_kernels, memory_kernels: as
            ``infralens.trace.analyze``.
        retries: how many times a task that raised is run again.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = _infralens.expand_paths([os.fspath(p) for p in paths])
    options = {"hta_compat": hta_compat, "include_last_step": include_last_step,
               "comm_kernels": comm_kernels, "memory_kernels": memory_kernels}
    # One task per file; pure (the default), so its key is a hash of the file name and options.
    futures = client.map(summarize_task, files, options=options, retries=retries)
    summaries = client.gather(futures)
    return analyze_summaries(summaries, labels=files, align_clocks=align_clocks)
