"""Transcript I/O: what DP-SGD releases (θ_t, g_t, batch masks), streamed to an uncompressed ``.npz``.

Files are read without pickle (``meta`` is JSON text; object arrays are
refused) and large members are memory-mapped. :class:`TranscriptWriter`
appends chunk by chunk, so a transcript never has to fit in memory; the
trainer (:func:`reconrisk._src.train.dpsgd.train`) records one through its
per-step hook.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ReconRiskError


# ----------------------------------------------------------------------------------------
# transcript
# ----------------------------------------------------------------------------------------
@dataclass
class Transcript:
    """What DP-SGD releases (Hayes, Mahloujifar & Balle 2023, §3.1: all privatised gradients and iterates).

    ``thetas`` (T+1, P): θ_0 … θ_T, where g_t was computed at θ_t.
    ``grads`` (T, P): the privatised sums g_t. ``masks`` (T, N) bool: batch
    membership of every training point (the adversary may read only the rows
    of the points it knows). ``meta``: the release, model and learning rate.
    Arrays may be numpy memory maps when loaded from disk.
    """

    thetas: np.ndarray
    grads: np.ndarray
    masks: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(self.grads.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.thetas.nbytes + self.grads.nbytes + self.masks.nbytes)

    def save(self, path: str | os.PathLike) -> Path:
        """Write an uncompressed ``.npz`` (no pickles; ``meta`` stored as JSON text)."""
        writer = TranscriptWriter(path, self.thetas.shape[1], self.masks.shape[1], self.steps, self.meta)
        writer.write_initial(self.thetas[0])
        writer.write_chunk(self.thetas[1:], self.grads, self.masks)
        return writer.close()

    @classmethod
    def load(cls, path: str | os.PathLike, *, mmap: bool = True) -> "Transcript":
        """Read a transcript ``.npz`` without pickle; large arrays are memory-mapped."""
        p = Path(path)
        if not p.is_file():
            raise ReconRiskError(f"transcript file not found: {str(p)!r}")
        if not mmap:
            try:
                with np.load(p, allow_pickle=False) as z:
                    arrays = {k: z[k] for k in ("thetas", "grads", "masks", "meta")}
            except (ValueError, OSError, KeyError, zipfile.BadZipFile) as exc:
                raise ReconRiskError(f"{str(p)!r} is not a reconrisk transcript: {exc}") from None
        else:
            arrays = _mmap_npz(p, ("thetas", "grads", "masks", "meta"))
        try:
            meta = json.loads(str(arrays["meta"][()]))
        except (ValueError, TypeError, IndexError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            raise ReconRiskError(f"{str(p)!r} is not a reconrisk transcript: its metadata is not JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise ReconRiskError(f"{str(p)!r} is not a reconrisk transcript: its metadata must be a JSON object")
        try:
            return cls(arrays["thetas"], arrays["grads"], arrays["masks"].astype(bool, copy=False), meta)
        except ReconRiskError as exc:
            raise ReconRiskError(f"{str(p)!r}: {exc}") from None
        except (ValueError, TypeError) as exc:
            raise ReconRiskError(f"{str(p)!r} is not a reconrisk transcript: {exc}") from None


#: Largest compressed member read into memory (stored members are memory-mapped instead).
_MAX_MEMBER_BYTES = 512 * 2**20


def _mmap_npz(path: Path, names) -> dict:
    """Memory-map the members of an uncompressed ``.npz`` (read-only, no pickle)."""
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for name in names:
                info = zf.getinfo(name + ".npy")
                if info.compress_type != zipfile.ZIP_STORED and info.file_size > _MAX_MEMBER_BYTES:
                    raise ValueError(f"member {name} declares {info.file_size:,} bytes uncompressed (limit "
                                     f"{_MAX_MEMBER_BYTES:,})")
                if info.compress_type != zipfile.ZIP_STORED:
                    with zf.open(info) as fh:
                        out[name] = np.load(io.BytesIO(fh.read()), allow_pickle=False)
                    continue
                with open(path, "rb") as fh:
                    fh.seek(info.header_offset)
                    local = fh.read(30)
                    if local[:4] != b"PK\x03\x04":
                        raise ValueError("bad local header")
                    name_len = int.from_bytes(local[26:28], "little")
                    extra_len = int.from_bytes(local[28:30], "little")
                    start = info.header_offset + 30 + name_len + extra_len
                    fh.seek(start)
                    version = np.lib.format.read_magic(fh)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, fortran, dtype = read_header(fh)
                    offset = fh.tell()
                if dtype.hasobject:
                    raise ValueError("object arrays are refused")
                if dtype.kind in "US" or int(np.prod(shape)) == 0:
                    with zf.open(info) as fh2:
                        out[name] = np.load(io.BytesIO(fh2.read()), allow_pickle=False)
                else:
                    out[name] = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape,
                                          order="F" if fortran else "C")
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ReconRiskError(f"{str(path)!r} is not a reconrisk transcript: {exc}") from None
    return out


class TranscriptWriter:
    """Streams a transcript into an uncompressed ``.npz`` chunk by chunk (bounded memory)."""

    def __init__(self, path, n_params: int, n_points: int, steps: int, meta: dict):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.zf = zipfile.ZipFile(self.path, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self.shapes = {"thetas": (steps + 1, n_params), "grads": (steps, n_params), "masks": (steps, n_points)}
        self.dtypes = {"thetas": np.dtype("<f4"), "grads": np.dtype("<f4"), "masks": np.dtype("|b1")}
        self.meta = meta
        self.handles = {}
        self.written = {k: 0 for k in self.shapes}
        self.tmp = {}
        # zipfile can write only one member at a time: stage members as files, then store them.
        for name in self.shapes:
            tmp = self.path.with_name(self.path.name + f".{name}.part")
            fh = open(tmp, "wb")
            header = {"descr": np.lib.format.dtype_to_descr(self.dtypes[name]), "fortran_order": False,
                      "shape": self.shapes[name]}
            np.lib.format.write_array_header_2_0(fh, header)
            self.handles[name] = fh
            self.tmp[name] = tmp

    def _append(self, name, arr):
        arr = np.ascontiguousarray(arr, dtype=self.dtypes[name])
        self.handles[name].write(arr.tobytes())
        self.written[name] += arr.shape[0]

    def write_initial(self, theta0):
        self._append("thetas", np.asarray(theta0)[None])

    def write_chunk(self, thetas_next, grads, masks):
        self._append("thetas", thetas_next)
        self._append("grads", grads)
        self._append("masks", masks)

    def close(self) -> Path:
        for name, fh in self.handles.items():
            fh.close()
            if self.written[name] != self.shapes[name][0]:
                raise RuntimeError(f"transcript member {name}: wrote {self.written[name]} rows of {self.shapes[name][0]}")
            self.zf.write(self.tmp[name], arcname=name + ".npy")
            os.remove(self.tmp[name])
        buf = io.BytesIO()
        np.save(buf, np.array(json.dumps(self.meta)), allow_pickle=False)
        self.zf.writestr("meta.npy", buf.getvalue())
        self.zf.close()
        return self.path


# ----------------------------------------------------------------------------------------
# the trainer's side of the transcript hook (moved here from dpsgd.py)
# ----------------------------------------------------------------------------------------
class TranscriptSink:
    """Host side of :class:`RecordTranscript`: stream chunks to disk or keep them in memory."""

    def __init__(self, path, n_params: int, n_points: int, steps: int, meta: dict, theta0):
        self.meta = meta
        self.parts: list = []
        self.writer = None
        if path is not None:
            self.writer = TranscriptWriter(path, n_params, n_points, steps, meta)
            self.writer.write_initial(theta0)

    def add(self, out, theta_after):
        thetas, grads, masks = (np.asarray(a) for a in out)
        if self.writer is not None:
            self.writer.write_chunk(np.concatenate([thetas[1:], theta_after[None]]), grads, masks)
        else:
            self.parts.append((thetas, grads, masks))

    def close(self, theta_final) -> Transcript:
        if self.writer is not None:
            return Transcript.load(self.writer.close())
        thetas = np.concatenate([p[0] for p in self.parts] + [theta_final[None]])
        return Transcript(thetas, np.concatenate([p[1] for p in self.parts]),
                          np.concatenate([p[2] for p in self.parts]), self.meta)


def transcript_meta(model, release, cfg, clip_mode, seed) -> dict:
    return {
        "release": release.to_dict(),
        "model": model.to_dict(),
        "learning_rate": cfg.learning_rate,
        "momentum": cfg.momentum,
        "clip_mode": clip_mode,
        "normalizer": cfg.normalizer,
        "seed": seed,
        "update": "theta_{t+1} = theta_t - learning_rate * g_t / normalizer"
        if cfg.momentum == 0 else "v = momentum * v + g_t / normalizer; theta_{t+1} = theta_t - learning_rate * v",
    }
