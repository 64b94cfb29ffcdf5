"""Output helpers shared by the report modules and the CLI: JSON, figures, output folders.

``jsonable`` turns numpy scalars/arrays into plain JSON types (non-finite
floats become ``null`` or ``"inf"``/``"-inf"``); ``pyplot`` imports matplotlib
with the headless Agg backend on first use; ``save_figure`` writes a figure as
PNG and SVG and closes it.

Every file is written atomically (:func:`atomic_write`: a temporary file in
the same folder, flushed, then ``os.replace``), so a reader never sees half a
file and an interrupted run leaves the previous complete file or none.
:func:`check_out_dir` checks an ``--out`` folder (a directory, or creatable,
and writable) *before* a command does any work; :class:`IncrementalResults`
rewrites a results file after each finished item so an interrupted run keeps
what it finished.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .errors import ReconRiskError, SyntaxInvalid


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


def check_out_dir(out_dir: str | os.PathLike, flag: str = "--out") -> Path:
    """Check that ``out_dir`` is, or can become, a writable directory; create nothing.

    Raises :class:`ReconRiskError` naming ``flag`` for an empty path, a path
    that is a file or runs through a file, or a folder (or its nearest
    existing parent) that is not writable — e.g. under ``/proc``.
    """
    text = os.fspath(out_dir) if isinstance(out_dir, (str, os.PathLike)) else None
    if not text or not text.strip() or "\x00" in text:
        raise ReconRiskError(f"{flag} must be a folder path; found {text!r}")
    path = Path(text)
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            raise ReconRiskError(f"{flag} {text!r} runs through a dangling symbolic link {str(probe)!r}")
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        where = "is a file" if probe == path else f"runs through the file {str(probe)!r}"
        raise ReconRiskError(f"{flag} {text!r} {where}, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ReconRiskError(f"{flag} {text!r}: cannot write into {str(probe)!r} (permission denied)")
    try:
        st = os.statvfs(probe)
        if st.f_flag & getattr(os, "ST_RDONLY", 1) or st.f_blocks == 0:  # read-only, or /proc, /sys
            raise ReconRiskError(f"{flag} {text!r}: {str(probe)!r} is on a read-only or virtual file system")
    except OSError:  # pragma: no cover - statvfs unsupported
        pass
    return path


def check_out_file(path: str | os.PathLike, flag: str) -> Path:
    """Check that ``path`` can be written as a file (not a folder; its folder is, or can become, writable)
    before any work is done; create nothing. One-line :class:`ReconRiskError` naming ``flag`` otherwise."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not text or not text.strip() or "\x00" in text:
        raise ReconRiskError(f"{flag} must be a file path; found {text!r}")
    p = Path(text)
    if p.is_dir():
        raise ReconRiskError(f"{flag} must be a file path; found the folder {text!r}")
    if p.exists() and not os.access(p, os.W_OK):
        raise ReconRiskError(f"{flag} {text!r}: cannot write the file (permission denied)")
    try:
        check_out_dir(p.parent if str(p.parent) else Path("."), "its folder")
    except ReconRiskError as exc:
        raise ReconRiskError(f"{flag} {text!r}: cannot write a file there ({exc})") from None
    return p


def ensure_out_dir(out_dir: str | os.PathLike, flag: str = "--out") -> Path:
    """:func:`check_out_dir`, then create the folder; an OS failure becomes a one-line error."""
    path = check_out_dir(out_dir, flag)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReconRiskError(f"{flag} {str(path)!r}: cannot create the folder ({exc.strerror or exc})") from None
    return path


def _umask() -> int:
    """The process umask (read by setting and restoring it: the only portable way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path`` atomically.

    On any exception the temporary file is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=target.parent)
    try:
        # mkstemp creates the file 0600; a result file gets the permissions open() would give it (0666 & ~umask)
        os.fchmod(fd, 0o666 & ~_umask())
    finally:
        os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write text or bytes to ``path`` atomically (temporary file + ``os.replace``)."""
    with atomic_path(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
    return Path(path)


def write_json(payload: dict, out_dir: str | Path, name: str = "results.json") -> Path:
    """``out_dir/name`` holding ``payload`` as JSON, written atomically."""
    text = dumps(payload) + "\n"
    return atomic_write(Path(out_dir) / name, text)


class IncrementalResults:
    """A JSON results file rewritten atomically after every finished item.

    ``{**header, "complete": false, "results": [...]}`` until :meth:`finish`
    sets ``"complete": true``; an interrupted run leaves a valid file with
    every item finished so far.
    """

    def __init__(self, out_dir: str | Path, name: str = "results.partial.json", *, header: dict | None = None):
        self.path = Path(out_dir) / name
        self.header = dict(header or {})
        self.results: list = []

    def _write(self, complete: bool) -> Path:
        return write_json({**self.header, "complete": complete, "results": self.results}, self.path.parent,
                          self.path.name)

    def add(self, item: Any) -> Path:
        self.results.append(item.to_dict() if hasattr(item, "to_dict") else item)
        return self._write(False)

    def finish(self) -> Path:
        return self._write(True)


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
    try:
        for path, kw in zip(paths, ({"dpi": dpi}, {})):
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=path.suffix[1:], bbox_inches="tight", **kw)
    finally:
        pyplot().close(fig)
    return paths


#: Deepest nesting of lists/tables a TOML or JSON input may have (no input of reconrisk nests past 4).
MAX_NESTING = 64


def _depth_ok(obj: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``obj`` nests lists/dicts at most ``limit`` deep (iterative: never recurses itself)."""
    stack = [(obj, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            x = list(x.values())
        if isinstance(x, (list, tuple)):
            if d > limit:
                return False
            stack.extend((y, d + 1) for y in x)
    return True


def parse_text(text: str, kind: str, where: str) -> Any:
    """A TOML or JSON document (``kind`` "toml" | "json") from untrusted text, refusing in one line
    (:class:`ReconRiskError` naming ``where``) what the parsers would raise on or what would break later code:
    invalid syntax, nesting deeper than :data:`MAX_NESTING` (the parsers hit Python's recursion limit), and
    integers past Python's digit limit for string conversion (4,300 digits)."""
    try:
        doc = tomllib.loads(text) if kind == "toml" else json.loads(text)
    except RecursionError:
        raise ReconRiskError(f"{where} nests lists or tables too deeply (at most {MAX_NESTING} levels)") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise SyntaxInvalid(f"{where} is not valid {kind.upper()}: {exc}") from None
    except ValueError as exc:  # int() of a numeral past sys.get_int_max_str_digits()
        if "digits" in str(exc):
            raise ReconRiskError(f"{where} holds an integer too long to read (over "
                                 f"{sys.get_int_max_str_digits()} digits)") from None
        raise SyntaxInvalid(f"{where} is not valid {kind.upper()}: {exc}") from None
    if not _depth_ok(doc):
        raise ReconRiskError(f"{where} nests lists or tables too deeply (at most {MAX_NESTING} levels)")
    return doc
