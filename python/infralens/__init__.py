"""InfraLens in Python: the engine of the ``infralens`` CLI and of ``infralens serve``'s API.

Every function takes keyword arguments named as the web API names its parameters (the CLI's
long flags without the dashes, ``_`` for ``-``: ``global_batch`` is ``--global-batch``) and
returns what the API (or ``infralens <command> --json``) returns, parsed: a :class:`Result`, a
plain ``dict`` with a ``to_frame()`` that gives the result's rows as a pandas DataFrame.

A bad request raises :class:`InfraLensError`, whose ``parameter`` names the argument at fault::

    >>> import infralens
    >>> r = infralens.plan(model="llama3-70b", cluster="dgx-h100", gpus=64, global_batch=512)
    >>> r.to_frame()[["layout", "step_time_s", "mfu"]].head(3)

See docs/python.md. ``infralens.trace`` analyses profiler traces; ``infralens.distributed``
runs that analysis on a Dask cluster.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from typing import Any, Iterable, Mapping

from . import _infralens

__version__: str = _infralens.__version__

__all__ = [
    "InfraLensError",
    "Result",
    "plan",
    "memory",
    "schedule",
    "comm",
    "comm_plan",
    "export",
    "validate",
    "trace",
    "parameters",
]


class InfraLensError(ValueError):
    """A request the engine refused or could not complete.

    Attributes:
        message: the engine's one-line message (the CLI's and the API's).
        parameter: the keyword argument at fault (``"gpus"``), or ``""`` when no single one is.
        status: the API's HTTP status (400 bad input, 404 unknown name, 500 failure) or, for the
            commands that read files (validate, trace), the CLI's exit code (2 usage, 1 failure).
    """

    def __init__(self, message: str, parameter: str = "", status: int = 400):
        super().__init__(f"{parameter}: {message}" if parameter and not message.startswith(
            ("--" + parameter.replace("_", "-"), parameter)) else message)
        self.message = message
        self.parameter = parameter
        self.status = status


class Result(dict):
    """A result: the JSON document as a plain ``dict``, plus :meth:`to_frame`.

    ``table`` names the list ``to_frame()`` returns by default; ``tables()`` lists the others.
    """

    _tables: dict[str, str] = {}  # name -> path of a list of objects ("a.b")
    _default: str = ""

    def tables(self) -> list[str]:
        """The names ``to_frame(name)`` accepts for this result."""
        return [n for n, path in self._tables.items() if _at(self, path) is not None]

    def to_frame(self, table: str | None = None):
        """The rows of one of the result's tables as a pandas DataFrame.

        Args:
            table: one of :meth:`tables`; default: the result's main table (ranked plans,
                memory per rank, schedule actions, ...). Nested objects become dotted columns
                (``memory.total_bytes``).
        """
        import pandas as pd  # only to_frame needs pandas

        name = table or self._default
        if name not in self._tables:
            raise InfraLensError(
                f"table '{name}': this result has {', '.join(self.tables()) or 'no tables'}",
                "table")
        rows = _at(self, self._tables[name])
        if rows is None:
            raise InfraLensError(f"table '{name}': not in this result", "table")
        rows = _rows_of(name, rows)
        return pd.json_normalize(rows) if rows else pd.DataFrame()


def _at(doc: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(doc, Mapping) or key not in doc:
            return None
        doc = doc[key]
    return doc


def _rows_of(name: str, rows: Any) -> list:
    """The list of objects to tabulate; "per rank" tables get a rank column."""
    if isinstance(rows, Mapping):  # a name -> value object: one row per name
        return [{"name": k, **(v if isinstance(v, Mapping) else {"value": v})}
                for k, v in rows.items()]
    out = []
    for r in rows:
        out.append(r if isinstance(r, Mapping) else {"value": r})
    return out


def _result(doc: Any, kind: type[Result]) -> Any:
    return kind(doc) if isinstance(doc, Mapping) else doc


def _form_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value) if not isinstance(value, float) else repr(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_form_value(name, v) for v in value)
    raise InfraLensError(
        f"{type(value).__name__} is not a parameter value (give a str, number, bool or list)",
        name)


def _call_api(path: str, params: Mapping[str, Any]) -> Any:
    """One API request in process; the parsed JSON, or the text of a non-JSON answer."""
    form = urllib.parse.urlencode(
        [(k, _form_value(k, v)) for k, v in params.items() if v is not None])
    status, content_type, body = _infralens.api(path, form)
    if status != 200:
        try:
            err = json.loads(body)
        except ValueError:
            raise InfraLensError(body.decode("utf-8", "replace"), "", status) from None
        raise InfraLensError(err.get("error", ""), err.get("parameter", ""), status)
    if content_type.startswith("application/json"):
        return json.loads(body)
    return body.decode("utf-8")


def _flags(params: Mapping[str, Any]) -> list[str]:
    """Keyword arguments as the CLI's flags (True: the flag alone; False, None: left out)."""
    out: list[str] = []
    for name, value in params.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        else:
            out += [flag, _form_value(name, value)]
    return out


def _paths(paths: Any) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    if isinstance(paths, Iterable):
        out = [os.fspath(p) for p in paths]
        if out:
            return out
    raise InfraLensError("give one or more trace files or folders", "paths", 2)


def _run_command(args: list[str]) -> Any:
    """One CLI command in process, its --json output parsed.

    A command that wrote its document and then failed (``trace analyze`` with some files it
    could not use: they are in the result's "errors") returns the document with a warning, as
    the CLI prints it and exits 1 or 2."""
    code, out, _err, message, parameter = _infralens.command(args)
    if code != 0:
        if out.strip():
            import warnings

            warnings.warn(message, RuntimeWarning, stacklevel=3)
            return json.loads(out)
        raise InfraLensError(message, parameter, code)
    return json.loads(out)


# --- results ---------------------------------------------------------------------------------


class PlanResult(Result):
    """``plan``: the ranked layouts (``to_frame()``), or one layout evaluated."""

    _tables = {"plans": "plans", "constraints": "constraints", "memory": "plan.memory.ranks",
               "comm": "plan.comm"}
    _default = "plans"

    def to_frame(self, table: str | None = None):
        if table is None and "plans" not in self:  # one layout evaluated: its memory per rank
            table = "memory"
        return super().to_frame(table)


class MemoryResult(Result):
    """``memory``: bytes per GPU; ``to_frame()`` has one row per pipeline rank."""

    _tables = {"ranks": "ranks", "stages": "stages"}
    _default = "ranks"


class ScheduleResult(Result):
    """``schedule``: a simulated pipeline schedule; ``to_frame()`` has one row per action."""

    _tables = {"actions": "actions", "ranks": "ranks"}
    _default = "actions"


class CommResult(Result):
    """``comm``: one collective's time by every algorithm (``to_frame()``: fastest first)."""

    _tables = {"candidates": "candidates", "links": "links"}
    _default = "candidates"


class CommPlanResult(Result):
    """``comm_plan``: every communication of a training step (``to_frame()``: one row each)."""

    _tables = {"items": "items"}
    _default = "items"


class ExportResult(Result):
    """``export``: a framework configuration (``content``) for the layout, and notes."""

    _tables = {"notes": "notes"}
    _default = "notes"


class ValidateResult(Result):
    """``validate``: published runs against the step-time model (``to_frame()``: one per run)."""

    _tables = {"rows": "rows", "sources": "sources"}
    _default = "rows"


# --- the engines -----------------------------------------------------------------------------


def plan(**params: Any) -> PlanResult:
    """The ranked layouts of a model on a cluster (``infralens plan --json``, ``/api/plan``).

    With a degree (``tp``, ``pp``, ``dp``, ...) the one layout they name, evaluated. Parameters
    as ``infralens.parameters("plan")`` lists them: model, cluster, gpus or nodes, global_batch,
    seq, precision, the degrees, top, ...
    """
    return _result(_call_api("/api/plan", params), PlanResult)


def memory(**params: Any) -> MemoryResult:
    """Bytes per GPU for weights, gradients, optimizer states and activations, per pipeline rank
    (``infralens memory --json``, ``/api/memory``)."""
    return _result(_call_api("/api/memory", params), MemoryResult)


def schedule(**params: Any) -> ScheduleResult | str:
    """A pipeline schedule generated and simulated (``infralens schedule --json``,
    ``/api/schedule``): schedule, pp, vpp, microbatches, f, b, w, p2p, ... With ``format``
    other than json, the text (svg, csv, ascii) instead of a result."""
    return _result(_call_api("/api/schedule", params), ScheduleResult)


def comm(**params: Any) -> CommResult:
    """One collective on a cluster by every algorithm (``infralens comm --json``,
    ``/api/comm``): collective, size, group, cluster, gpus, degrees, ..."""
    return _result(_call_api("/api/comm", params), CommResult)


def comm_plan(**params: Any) -> CommPlanResult:
    """Every communication of one training step of a layout (``infralens comm-plan --json``,
    ``/api/comm-plan``)."""
    return _result(_call_api("/api/comm-plan", params), CommPlanResult)


def export(**params: Any) -> ExportResult:
    """The layout the degrees give (or the planner's best) as a Megatron-LM, DeepSpeed or
    torchtitan configuration, or its schedule as a PyTorch CSV (``/api/export``): ``format``
    is required; the file is in ``result["content"]``."""
    return _result(_call_api("/api/export", params), ExportResult)


def validate(published: str | os.PathLike | None = None,
             efficiency: str | os.PathLike | None = None) -> ValidateResult:
    """Published training runs predicted by the step-time model (``infralens validate --json``).

    Args:
        published: a CSV of runs (data/published/README.md); default: the built-in copy.
        efficiency: an efficiency-constants CSV (``trace.calibrate``'s output); default: built in.
    """
    args = ["validate", "--json"] + _flags({"published": published, "efficiency": efficiency})
    return _result(_run_command(args), ValidateResult)


def parameters(function: str) -> list[dict]:
    """The keyword arguments ``function`` takes ("plan", "memory", "schedule", "comm",
    "comm_plan", "export"): name, help and default, from the engine itself."""
    paths = {"plan": "/api/plan", "memory": "/api/memory", "schedule": "/api/schedule",
             "comm": "/api/comm", "comm_plan": "/api/comm-plan", "export": "/api/export"}
    if function not in paths:
        raise InfraLensError(f"'{function}': one of {', '.join(paths)}", "function")
    status, _ct, body = _infralens.api("/api", "", "GET")
    for ep in json.loads(body)["endpoints"]:
        if ep["path"] == paths[function]:
            return ep["parameters"]
    return []


def _document(fn, path: str) -> None:
    """Adds the parameter list the engine declares to fn's docstring."""
    try:
        status, _ct, body = _infralens.api("/api", "", "GET")
        endpoints = {e["path"]: e for e in json.loads(body)["endpoints"]}
    except Exception:  # documentation only
        return
    ep = endpoints.get(path)
    if ep is None:
        return
    lines = ["", "Keyword arguments (the API's parameters):"]
    for p in ep["parameters"]:
        default = f" (default {p['default']})" if p.get("default") else ""
        lines.append(f"    {p['name']}: {p['help']}{default}")
    fn.__doc__ = (fn.__doc__ or "") + "\n".join(lines) + "\n"


for _fn, _path in ((plan, "/api/plan"), (memory, "/api/memory"), (schedule, "/api/schedule"),
                   (comm, "/api/comm"), (comm_plan, "/api/comm-plan"), (export, "/api/export")):
    _document(_fn, _path)
del _fn, _path

from . import trace  # noqa: E402  (uses the helpers above)
