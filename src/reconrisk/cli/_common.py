"""Helpers shared by the command modules: JSON or rich-table output."""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence

import numpy as np


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.floating,)):
        obj = float(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


def print_json(payload: dict) -> None:
    print(json.dumps(_clean(payload), indent=2))


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right" if c not in ("method", "quantity") else "left")
    for row in rows:
        table.add_row(*[fmt(x) for x in row])
    Console().print(table)


def fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x == 0 or (1e-3 <= abs(x) < 1e5):
            return f"{x:.4f}"
        return f"{x:.4g}"
    return "" if x is None else str(x)
