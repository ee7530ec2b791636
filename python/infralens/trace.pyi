"""Type stub for infralens.trace."""

from __future__ import annotations

import os
from typing import Iterable

from . import Result

_Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]

class AnalysisResult(Result): ...
class CalibrationResult(Result): ...

def analyze(paths: _Paths, *, hta_compat: bool = ..., include_last_step: bool = ...,
            align_clocks: bool = ..., comm_kernels: str | None = ...,
            memory_kernels: str | None = ...) -> AnalysisResult: ...
def calibrate(paths: _Paths, *, gpu: str | None = ..., cluster: str | None = ...,
              min_samples: int | None = ...) -> CalibrationResult: ...
def summarize(path: str | os.PathLike[str], *, hta_compat: bool = ...,
              include_last_step: bool = ..., comm_kernels: str | None = ...,
              memory_kernels: str | None = ...) -> str: ...
def analyze_summaries(summaries: Iterable[str | os.PathLike[str] | dict[str, object]], *,
                      labels: Iterable[str] | None = ...,
                      align_clocks: bool = ...) -> AnalysisResult: ...
