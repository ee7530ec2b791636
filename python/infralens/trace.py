"""PyTorch profiler (Kineto) traces: ``infralens trace analyze`` and ``trace calibrate``.

``paths`` is a trace file, a folder of one file per rank, or a list of them, as the CLI takes.
Keyword arguments are the CLI's flags (and the API's parameters) without the dashes.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import json
import warnings

from . import InfraLensError, Result, _flags, _infralens, _paths, _run_command  # noqa: F401

__all__ = ["analyze", "calibrate", "summarize", "analyze_summaries", "AnalysisResult",
           "CalibrationResult"]


class AnalysisResult(Result):
    """``trace analyze --json``: per-rank breakdown, collectives, pipeline bubble.

    Tables: ``ranks`` (default: one row per rank), ``collectives`` and ``streams`` (one row per
    rank and kind / stream, with a ``rank`` column), ``kernel_types`` (time per combination of
    computation, communication and memory kernels), ``errors``.
    """

    _tables = {"ranks": "ranks", "collectives": "ranks", "streams": "ranks",
               "kernel_types": "kernel_types", "errors": "errors"}
    _default = "ranks"

    def to_frame(self, table: str | None = None):
        name = table or self._default
        if name in ("collectives", "streams"):
            import pandas as pd

            rows = [{"rank": r.get("rank"), **row}
                    for r in self.get("ranks", []) for row in r.get(name, [])]
            return pd.json_normalize(rows) if rows else pd.DataFrame()
        if name == "ranks":
            import pandas as pd

            # The per-rank scalars; the nested lists have their own tables.
            rows = [{k: v for k, v in r.items() if not isinstance(v, list)}
                    for r in self.get("ranks", [])]
            return pd.json_normalize(rows) if rows else pd.DataFrame()
        return super().to_frame(table)


class CalibrationResult(Result):
    """``trace calibrate --format json``: the fitted efficiency constants and their samples."""

    _tables = {"rows": "rows", "samples": "samples"}
    _default = "rows"


def analyze(paths: str | os.PathLike | Iterable[str | os.PathLike], *,
            hta_compat: bool = False, include_last_step: bool = False,
            align_clocks: bool = False, comm_kernels: str | None = None,
            memory_kernels: str | None = None) -> AnalysisResult:
    """What each rank's GPUs did (``infralens trace analyze PATHS --json``).

    Args:
        paths: trace files (.json, .json.gz) or folders of them, one file per rank.
        hta_compat: HTA's definitions and numbers (docs/measurement.md).
        include_last_step: keep the last ProfilerStep (HTA drops it).
        align_clocks: shift each rank's clock by the offset matched collectives give.
        comm_kernels, memory_kernels: regular expressions that classify kernels.

    Raises:
        InfraLensError: when no file could be analysed (``parameter`` names the flag at fault).
    """
    args = ["trace", "analyze", *_paths(paths), "--json"] + _flags(
        {"hta_compat": hta_compat, "include_last_step": include_last_step,
         "align_clocks": align_clocks, "comm_kernels": comm_kernels,
         "memory_kernels": memory_kernels})
    return AnalysisResult(_run_command(args))


def calibrate(paths: str | os.PathLike | Iterable[str | os.PathLike], *,
              gpu: str | None = None, cluster: str | None = None,
              min_samples: int | None = None) -> CalibrationResult:
    """The planner's efficiency constants fitted from traces recorded with
    ``record_shapes=True`` (``infralens trace calibrate PATHS --format json``).

    Args:
        paths: trace files or folders.
        gpu: the GPU preset the traces ran on; default: the one their deviceProperties name.
        cluster: a cluster preset or topology file, for the link rows.
        min_samples: fewer samples keep a curve's default.
    """
    args = ["trace", "calibrate", *_paths(paths), "--format", "json"] + _flags(
        {"gpu": gpu, "cluster": cluster, "min_samples": min_samples})
    return CalibrationResult(_run_command(args))


def summarize(path: str | os.PathLike, *, hta_compat: bool = False,
              include_last_step: bool = False, comm_kernels: str | None = None,
              memory_kernels: str | None = None) -> str:
    """One rank's trace file as a summary (``infralens trace summarize FILE``): the JSON text,
    one line, versioned ("format": "infralens-trace-summary", "version": 1; docs/scale-out.md).

    Reads one file, keeps one rank's events while it analyses them, and returns what the merge
    needs: its size grows with the rank's collectives and steps, not with its kernels. A file
    that cannot be read gives a summary recording the error (the merge lists it, as ``analyze``
    lists the files it could not use). The options are fixed here; every merged summary must
    have the same.
    """
    try:
        return _infralens.summarize(os.fspath(path), hta_compat, include_last_step,
                                    comm_kernels or "", memory_kernels or "")
    except ValueError as e:
        raise InfraLensError(str(e), _infralens.parameter_of(str(e)), 2) from None


def analyze_summaries(summaries: Iterable[Any], *, labels: Iterable[str] | None = None,
                      align_clocks: bool = False) -> AnalysisResult:
    """Summaries merged into the analysis (``infralens trace analyze --summaries --json``).

    Given the summaries of a job's files in the order ``analyze`` reads them (a folder's files
    sorted by name), the result equals ``analyze(files, ...)`` with the summaries' options.

    Args:
        summaries: summary JSON texts (from :func:`summarize`), parsed dicts, or paths of
            summary files.
        labels: names for messages, one per summary (default: "summary N" or the path).
        align_clocks: shift each rank's clock by the offset matched collectives give.
    """
    texts, names = [], []
    for i, s in enumerate(summaries):
        if isinstance(s, dict):
            texts.append(json.dumps(s))
            names.append(f"summary {i + 1}")
        elif isinstance(s, str) and s.lstrip().startswith("{"):
            texts.append(s)
            names.append(f"summary {i + 1}")
        else:
            with open(s, encoding="utf-8") as f:
                texts.append(f.read())
            names.append(os.fspath(s))
    if labels is not None:
        names = list(labels)
    try:
        result = AnalysisResult(json.loads(_infralens.analyze_summaries(texts, names,
                                                                        align_clocks)))
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError):
            raise
        raise InfraLensError(str(e), "summaries", 1) from None
    if result.get("errors"):
        warnings.warn(f"{len(result['errors'])} trace files could not be used (see the result's "
                      "errors)", RuntimeWarning, stacklevel=2)
    return result
