"""Helpers shared by the command modules: JSON or rich-table output."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from .._io import dumps


def print_json(payload: dict) -> None:
    print(dumps(payload))


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, caption=caption)
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
