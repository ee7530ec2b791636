"""Type stub for infralens.distributed."""

from __future__ import annotations

import os
from typing import Any, Iterable

from .trace import AnalysisResult

def summarize_task(path: str, options: dict[str, Any]) -> str: ...
def analyze(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], client: Any, *,
            hta_compat: bool = ..., include_last_step: bool = ..., align_clocks: bool = ...,
            comm_kernels: str | None = ..., memory_kernels: str | None = ...,
            retries: int = ...) -> AnalysisResult: ...
