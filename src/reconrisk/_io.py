"""Output helpers shared by the report modules and the CLI: JSON and figures.

``jsonable`` turns numpy scalars/arrays into plain JSON types (non-finite
floats become ``null`` or ``"inf"``/``"-inf"``); ``pyplot`` imports matplotlib
with the headless Agg backend on first use; ``save_figure`` writes a figure as
PNG and SVG and closes it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """Plain JSON types: numpy scalars/arrays converted, non-finite floats as null or "inf"."""
    if isinstance(obj, dict):
        return {str(k): jsonable(val) for k, val in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(val) for val in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        obj = float(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


def dumps(payload: Any, indent: int = 2) -> str:
    return json.dumps(jsonable(payload), indent=indent)


def write_json(payload: dict, out_dir: str | Path, name: str = "results.json") -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(dumps(payload) + "\n")
    return path


def pyplot():
    """``matplotlib.pyplot`` with the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out_dir: str | Path, stem: str, *, dpi: int = 130) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` into ``out_dir``, close the figure, return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=dpi, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    pyplot().close(fig)
    return paths
