"""Datasets for the reconstruction audit: an embedded default and safe file readers.

Embedded default — ``digits``
    The 1,797 handwritten 8×8 digits of scikit-learn's ``load_digits()``
    (originally the UCI "Optical Recognition of Handwritten Digits" test
    set, Alpaydin & Kaynak 1998; distributed with scikit-learn under its
    BSD-3-Clause licence). ``src/reconrisk/_src/_data/digits.npz`` was generated
    once from scikit-learn 1.9.1 with
    ``np.savez_compressed(path, images=d.data.astype(np.uint8), labels=d.target.astype(np.uint8))``
    (pixel values are integers 0..16; we scale them to [0, 1] by dividing by
    16). scikit-learn is *not* a dependency: the array ships with the package.

MNIST (``mnist:PATH``)
    The IDX files of LeCun et al. ``PATH`` is a directory holding
    ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte`` (optionally
    ``.gz``; ``t10k-`` files when ``split="test"``), or the images file itself.
    :func:`read_idx` parses the format directly with numpy and raises
    :class:`~reconrisk.errors.ReconRiskError` on anything malformed (bad magic,
    unknown type code, truncated or trailing data).

CIFAR-10 (``cifar10:PATH``)
    The "python version" batches (``data_batch_1`` … ``data_batch_5``,
    ``test_batch``), which are Python pickles. They are read with a
    *restricted* unpickler: the only globals it resolves are numpy's array /
    dtype reconstructors and ``_codecs.encode``, and each is replaced by a
    stand-in of ours that merely records its arguments; arrays are then built
    with ``np.frombuffer`` from a plain numeric dtype. No other callable can be
    reached, so a hostile file can not execute code; anything unexpected is a
    :class:`ReconRiskError`.

All images are returned flattened to float32 in [0, 1] together with their
``image_shape`` (H, W, C), so that dense and convolutional models read the
same arrays. Every ``.npz`` is opened with ``allow_pickle=False``.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import pickle
import pickletools
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from . import _validate as v
from .errors import ReconRiskError

DATASET_FORMS = ("digits", "mnist:PATH", "cifar10:PATH")


@dataclass(frozen=True)
class Dataset:
    """Labelled images, flattened: ``x`` is (N, H·W·C) float32 in [0, 1]."""

    name: str
    x: np.ndarray
    y: np.ndarray
    image_shape: tuple[int, int, int]
    num_classes: int = 10

    def __post_init__(self) -> None:
        x = np.ascontiguousarray(self.x, dtype=np.float32)
        y = np.ascontiguousarray(self.y, dtype=np.int32)
        if x.ndim != 2 or y.shape != (x.shape[0],):
            raise ReconRiskError(f"dataset arrays must be (N, d) and (N,); found {x.shape} and {y.shape}")
        if int(np.prod(self.image_shape)) != x.shape[1]:
            raise ReconRiskError(f"image_shape {self.image_shape} does not match feature size {x.shape[1]}")
        if x.shape[0] and (y.min() < 0 or y.max() >= self.num_classes):
            raise ReconRiskError(f"labels must be in [0, {self.num_classes - 1}]; found {int(y.min())}..{int(y.max())}")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])

    def subset(self, index) -> "Dataset":
        return Dataset(self.name, self.x[index], self.y[index], self.image_shape, self.num_classes)

    def to_dict(self) -> dict:
        return {"name": self.name, "size": len(self), "image_shape": list(self.image_shape)}


# -- embedded digits --------------------------------------------------------------------
def load_digits() -> Dataset:
    """scikit-learn's 8×8 digits (1,797 images, 10 classes) scaled to [0, 1]."""
    ref = resources.files("reconrisk._src._data").joinpath("digits.npz")
    with ref.open("rb") as fh, np.load(io.BytesIO(fh.read()), allow_pickle=False) as z:
        images = z["images"].astype(np.float32) / 16.0
        labels = z["labels"].astype(np.int32)
    return Dataset("digits", images, labels, (8, 8, 1))


# -- IDX (MNIST) ------------------------------------------------------------------------
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


#: Largest file (or decompressed gzip stream) any reader accepts, and the
#: largest array an IDX header may declare. MNIST's training images are 47 MB,
#: a CIFAR-10 batch 31 MB.
MAX_FILE_BYTES = 512 * 2**20
#: Unpickler limits: opcodes in the stream, nesting depth of the result.
MAX_PICKLE_OPS = 1_000_000
MAX_PICKLE_DEPTH = 32


def _open_error(path: Path, exc: OSError) -> ReconRiskError:
    if isinstance(exc, FileNotFoundError):
        return ReconRiskError(f"file not found: {str(path)!r}")
    if isinstance(exc, IsADirectoryError):
        return ReconRiskError(f"{str(path)!r} is a directory, not a file")
    return ReconRiskError(f"cannot read {str(path)!r}: {exc.strerror or exc}")


def _read_bytes(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, gunzipped if it is gzip; at most ``max_bytes`` either way."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ReconRiskError(f"{str(path)!r} has {size:,} bytes; the limit is {max_bytes:,}")
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise _open_error(path, exc) from None
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, max_bytes, path)
    return raw


def _gunzip(raw: bytes, max_bytes: int, path: Path) -> bytes:
    """Decompress a gzip stream, refusing more than ``max_bytes`` of output (gzip bombs)."""

    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(raw, max_bytes + 1)
    except zlib.error as exc:
        raise ReconRiskError(f"{str(path)!r} is not a valid gzip file: {exc}") from None
    if len(out) > max_bytes:
        raise ReconRiskError(f"{str(path)!r} decompresses to more than {max_bytes:,} bytes (the limit)")
    if not d.eof:
        raise ReconRiskError(f"{str(path)!r} is a truncated gzip file")
    return out


def _idx_layout(header: bytes, name: str) -> tuple[int, tuple[int, ...], np.dtype, int]:
    """(header size, shape, dtype, payload bytes) from the first bytes of an IDX stream.

    The size product is computed with Python integers (no wrap-around) and
    compared with :data:`MAX_FILE_BYTES` before anything is allocated.
    """
    if len(header) < 4:
        raise ReconRiskError(f"{name} is not an IDX file: {len(header)} bytes, need at least a 4-byte header")
    if header[0] != 0 or header[1] != 0:
        raise ReconRiskError(f"{name} is not an IDX file: magic must start with two zero bytes; found {header[:4].hex()}")
    code, ndim = header[2], header[3]
    if code not in _IDX_TYPES:
        raise ReconRiskError(f"{name} has unknown IDX type code 0x{code:02x}; expected one of 08, 09, 0b, 0c, 0d, 0e")
    if ndim < 1:
        raise ReconRiskError(f"{name} declares 0 dimensions; expected at least 1")
    size = 4 + 4 * ndim
    if len(header) < size:
        raise ReconRiskError(f"{name} is truncated: header needs {size} bytes; found {len(header)}")
    shape = tuple(int.from_bytes(header[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_TYPES[code])
    payload = math.prod(shape) * dtype.itemsize
    if payload > MAX_FILE_BYTES:
        raise ReconRiskError(
            f"{name} declares shape {shape} ({payload:,} bytes of data); the limit is {MAX_FILE_BYTES:,} bytes"
        )
    return size, shape, dtype, payload


def parse_idx(raw: bytes, *, name: str = "IDX data") -> np.ndarray:
    """Parse the bytes of an IDX file (optionally already gunzipped)."""
    header, shape, dtype, payload = _idx_layout(bytes(raw[: 4 + 4 * 255]), name)
    expected = header + payload
    if len(raw) != expected:
        raise ReconRiskError(
            f"{name} has {len(raw)} bytes but its header (shape {shape}, type {dtype.str}) implies {expected}"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (MNIST's format), gzip-compressed or not.

    The header is read first; its declared size is checked against the cap
    (and, for an uncompressed file, against the file size) before the data
    are read, and a gzip stream is decompressed no further than that size + 1.
    """
    p = Path(path)
    name = repr(str(p))
    try:
        with p.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
            fh.seek(0)
            stream = gzip.GzipFile(fileobj=fh, mode="rb") if gz else fh
            try:
                head = stream.read(4)
                if len(head) == 4:
                    head += stream.read(4 * head[3])
                header, shape, dtype, payload = _idx_layout(head, name)
                if not gz:
                    size = p.stat().st_size
                    if size != header + payload:
                        raise ReconRiskError(
                            f"{name} has {size} bytes but its header (shape {shape}, type {dtype.str}) implies "
                            f"{header + payload}"
                        )
                body = stream.read(payload + 1)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                if not gz:
                    raise
                raise ReconRiskError(f"{name} is not a valid gzip file: {exc}") from None
    except OSError as exc:
        raise _open_error(p, exc) from None
    if len(body) != payload:
        raise ReconRiskError(
            f"{name} has {header + len(body)}{'+' if len(body) > payload else ''} bytes of data but its header "
            f"(shape {shape}, type {dtype.str}) implies {header + payload}"
        )
    return np.frombuffer(body, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _find(directory: Path, stems: list[str]) -> Path:
    for stem in stems:
        for suffix in ("", ".gz"):
            cand = directory / (stem + suffix)
            if cand.is_file():
                return cand
    raise ReconRiskError(f"no file named {stems[0]}[.gz] in {str(directory)!r}")


def load_mnist(path: str | os.PathLike, split: str = "train") -> Dataset:
    """MNIST (or any IDX image/label pair of the same layout) from a user path."""
    v.choice("split", split, ("train", "test"))
    p = Path(path)
    prefix = "train" if split == "train" else "t10k"
    if p.is_dir():
        images_path = _find(p, [f"{prefix}-images-idx3-ubyte", f"{prefix}-images.idx3-ubyte"])
        labels_path = _find(p, [f"{prefix}-labels-idx1-ubyte", f"{prefix}-labels.idx1-ubyte"])
    elif p.is_file():
        images_path = p
        name = p.name.replace("images", "labels").replace("idx3", "idx1")
        if name == p.name:
            raise ReconRiskError(f"cannot tell the labels file of {str(p)!r}; give the directory holding both files")
        labels_path = _find(p.parent, [name.removesuffix(".gz")])
    else:
        raise ReconRiskError(f"mnist path does not exist: {str(p)!r}")
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ReconRiskError(f"{str(images_path)!r} must hold uint8 images of shape (N, H, W); found {images.dtype} {images.shape}")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise ReconRiskError(
            f"{str(labels_path)!r} must hold {images.shape[0]} labels; found shape {labels.shape}"
        )
    if labels.size and labels.max() > 9:
        raise ReconRiskError(f"{str(labels_path)!r} labels must be in [0, 9]; found {int(labels.max())}")
    n, h, w = images.shape
    x = images.reshape(n, h * w).astype(np.float32) / 255.0
    return Dataset("mnist", x, labels.astype(np.int32), (h, w, 1))


# -- CIFAR-10 python batches, read with a restricted unpickler ------------------------------
_ALLOWED_KINDS = "biuf"  # plain numeric dtypes only; never object arrays


class _DTypeStub:
    def __init__(self, spec, align=0, copy=1):
        if isinstance(spec, bytes):
            spec = spec.decode("latin1")
        if not isinstance(spec, str):
            raise ReconRiskError(f"unexpected dtype spec in pickle: {spec!r}")
        self.spec = spec
        self.order = "|"

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) >= 2:
            order = state[1]
            self.order = order.decode("latin1") if isinstance(order, bytes) else str(order)

    def to_numpy(self) -> np.dtype:
        try:
            dt = np.dtype(self.spec)
        except TypeError:
            raise ReconRiskError(f"unsupported dtype in pickle: {self.spec!r}") from None
        if dt.kind not in _ALLOWED_KINDS:
            raise ReconRiskError(f"refusing dtype {self.spec!r} in pickle (numeric dtypes only)")
        if self.order in "<>":
            dt = dt.newbyteorder(self.order)
        return dt


def _as_dtype(obj) -> np.dtype:
    if isinstance(obj, _DTypeStub):
        return obj.to_numpy()
    raise ReconRiskError(f"unexpected dtype object in pickle: {type(obj).__name__}")


def _checked_shape(shape) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ReconRiskError(f"bad array shape in pickle: {shape!r}")
    return shape


class _ArrayStub:
    """Stands in for ``numpy.ndarray`` while unpickling; holds a real array once built."""

    def __init__(self):
        self.array: np.ndarray | None = None

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 5):
            raise ReconRiskError("unexpected ndarray state in pickle")
        _, shape, dtype, fortran, raw = state
        shape = _checked_shape(shape)
        dt = _as_dtype(dtype)
        if isinstance(raw, str):
            raw = raw.encode("latin1")
        if not isinstance(raw, (bytes, bytearray)):
            raise ReconRiskError("array payload in pickle is not raw bytes (object arrays are refused)")
        count = int(np.prod(shape, dtype=np.int64))
        if len(raw) != count * dt.itemsize:
            raise ReconRiskError(f"array payload has {len(raw)} bytes; shape {shape} needs {count * dt.itemsize}")
        arr = np.frombuffer(bytes(raw), dtype=dt).reshape(shape, order="F" if fortran else "C")
        self.array = arr.astype(dt.newbyteorder("="))


def _reconstruct(cls, shape, typecode):
    if cls is not _ArrayStub:
        raise ReconRiskError("unexpected numpy reconstruct call in pickle")
    return _ArrayStub()


def _frombuffer(buf, dtype, shape, order):
    stub = _ArrayStub()
    raw = buf.raw() if isinstance(buf, pickle.PickleBuffer) else buf
    stub.__setstate__((1, _checked_shape(tuple(shape)), dtype, order == "F", bytes(raw)))
    return stub


def _codecs_encode(obj, encoding="utf-8"):
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1"):
        raise ReconRiskError("unexpected _codecs.encode call in pickle")
    return obj.encode("latin1")


_SAFE_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): _ArrayStub,
    ("numpy", "dtype"): _DTypeStub,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("_codecs", "encode"): _codecs_encode,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        try:
            return _SAFE_GLOBALS[(module, name)]
        except KeyError:
            raise ReconRiskError(f"refusing to load {module}.{name} from a pickle (only numeric arrays are allowed)") from None


def _materialise(obj, depth: int = 0, memo: dict | None = None):
    """Replace array stubs by arrays, keeping shared sub-objects shared (no exponential blow-up).

    Nesting deeper than :data:`MAX_PICKLE_DEPTH` is refused (a CIFAR batch is 3 deep).
    """
    memo = {} if memo is None else memo
    key = id(obj)
    if key in memo:
        return memo[key]
    if depth > MAX_PICKLE_DEPTH:
        raise ReconRiskError(f"objects nested more than {MAX_PICKLE_DEPTH} deep in pickle")
    if isinstance(obj, _ArrayStub):
        if obj.array is None:
            raise ReconRiskError("incomplete array in pickle")
        out = obj.array
    elif isinstance(obj, dict):
        out = {(k.decode("latin1") if isinstance(k, bytes) else k): _materialise(val, depth + 1, memo)
               for k, val in obj.items()}
    elif isinstance(obj, list):
        out = [_materialise(x, depth + 1, memo) for x in obj]
    elif isinstance(obj, tuple):
        out = tuple(_materialise(x, depth + 1, memo) for x in obj)
    elif isinstance(obj, (_DTypeStub, pickle.PickleBuffer, set, frozenset, bytearray)):
        raise ReconRiskError(f"unexpected {type(obj).__name__} in pickle")
    else:
        out = obj
    memo[key] = out
    return out


def _scan_pickle(raw: bytes) -> None:
    """Walk the opcode stream once before unpickling: at most :data:`MAX_PICKLE_OPS` opcodes.

    ``pickletools.genops`` checks every declared length against the bytes
    actually present, so a header claiming gigabytes fails here, cheaply.
    """

    for count, _ in enumerate(pickletools.genops(raw)):
        if count >= MAX_PICKLE_OPS:
            raise ReconRiskError(f"more than {MAX_PICKLE_OPS:,} objects in pickle (the limit)")


def safe_unpickle(raw: bytes, *, name: str = "pickle") -> object:
    """Unpickle plain containers and numeric numpy arrays, nothing else (see module docstring).

    Limits: the stream is at most :data:`MAX_FILE_BYTES` (checked by the
    reader), holds at most :data:`MAX_PICKLE_OPS` opcodes, and the result is
    nested at most :data:`MAX_PICKLE_DEPTH` deep; shared sub-objects stay
    shared, so a "billion laughs" of shared tuples costs nothing.
    """
    try:
        _scan_pickle(raw)
        obj = _RestrictedUnpickler(io.BytesIO(raw), encoding="bytes").load()
        return _materialise(obj)
    except ReconRiskError as exc:
        raise ReconRiskError(f"{name}: {exc}") from None
    except RecursionError:
        raise ReconRiskError(f"{name}: objects nested too deep in pickle") from None
    except MemoryError:
        raise ReconRiskError(f"{name}: pickle needs more memory than this machine has") from None
    except Exception as exc:  # malformed stream: UnpicklingError, EOFError, struct errors, ...
        raise ReconRiskError(f"{name} is not a readable pickle: {type(exc).__name__}: {exc}") from None


def read_cifar10_batch(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 python batch: (uint8 images (N, 32, 32, 3), int labels (N,))."""
    p = Path(path)
    obj = safe_unpickle(_read_bytes(p), name=repr(str(p)))
    if not isinstance(obj, dict) or "data" not in obj or "labels" not in obj:
        raise ReconRiskError(f"{str(p)!r} is not a CIFAR-10 batch: expected a dict with 'data' and 'labels'")
    data = np.asarray(obj["data"])
    labels = obj["labels"]
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ReconRiskError(f"{str(p)!r}: 'data' must be uint8 of shape (N, 3072); found {data.dtype} {data.shape}")
    if isinstance(labels, np.ndarray):
        labels = labels.tolist()
    if not isinstance(labels, list) or not all(
        isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 9 for c in labels
    ):
        raise ReconRiskError(f"{str(p)!r}: 'labels' must be a list of integers in [0, 9]")
    if len(labels) != data.shape[0]:
        raise ReconRiskError(f"{str(p)!r}: {data.shape[0]} images but {len(labels)} labels")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), np.asarray(labels, dtype=np.int32)


def load_cifar10(path: str | os.PathLike, split: str = "train") -> Dataset:
    """CIFAR-10 from the python batches at ``path`` (directory or one batch file)."""
    v.choice("split", split, ("train", "test"))
    p = Path(path)
    if p.is_dir():
        if (p / "cifar-10-batches-py").is_dir():
            p = p / "cifar-10-batches-py"
        names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
        files = [p / n for n in names if (p / n).is_file()]
        if not files:
            raise ReconRiskError(f"no CIFAR-10 batch ({names[0]}) in {str(p)!r}")
    elif p.is_file():
        files = [p]
    else:
        raise ReconRiskError(f"cifar10 path does not exist: {str(p)!r}")
    parts = [read_cifar10_batch(f) for f in files]
    images = np.concatenate([a for a, _ in parts])
    labels = np.concatenate([b for _, b in parts])
    x = images.reshape(images.shape[0], -1).astype(np.float32) / 255.0
    return Dataset("cifar10", x, labels, (32, 32, 3))


# -- one entry point for the CLI ----------------------------------------------------------
def load_dataset(spec: str) -> Dataset:
    """``digits``, ``mnist:PATH`` or ``cifar10:PATH``."""
    if not isinstance(spec, str) or not spec:
        raise ReconRiskError(f"dataset must be one of {', '.join(DATASET_FORMS)}; found {spec!r}")
    if spec == "digits":
        return load_digits()
    kind, sep, path = spec.partition(":")
    if sep and kind in ("mnist", "cifar10"):
        if not path:
            raise ReconRiskError(f"dataset {kind}:PATH needs a path after the colon; found {spec!r}")
        if not Path(path).exists():
            raise ReconRiskError(f"dataset path does not exist: {path!r}")
        return load_mnist(path) if kind == "mnist" else load_cifar10(path)
    raise ReconRiskError(f"dataset must be one of {', '.join(DATASET_FORMS)}; found {spec!r}")


# -- synthetic priors ---------------------------------------------------------------------
def mean_pairwise_distance(x: np.ndarray, rng: np.random.Generator, pairs: int = 2000) -> float:
    """Mean L2 distance between random pairs of distinct rows of ``x``."""
    n = x.shape[0]
    if n < 2:
        raise ReconRiskError(f"need at least 2 points for pairwise distances; found {n}")
    i = rng.integers(0, n, pairs)
    j = (i + rng.integers(1, n, pairs)) % n
    return float(np.linalg.norm(x[i] - x[j], axis=1).mean())


def uniform_noise_prior(
    n: int, dim: int, rng: np.random.Generator, *, mean_distance: float | None = None
) -> np.ndarray:
    """``n`` uniform-noise candidates in [0, 1]^dim (Hayes, Mahloujifar & Balle 2023, Fig. 9).

    Hayes, Mahloujifar & Balle 2023 matches the noise prior's intra-sample distances to those of an
    MNIST prior. With ``mean_distance`` given we shrink U[0,1]^d towards 0.5 by
    the factor s = mean_distance / E‖U − U'‖ (capped at 1, so points stay in
    the box), using E‖U − U'‖ ≈ sqrt(d/6).
    """
    n = v.integer("prior_size", n, minimum=1)
    dim = v.integer("dim", dim, minimum=1)
    u = rng.random((n, dim), dtype=np.float64)
    if mean_distance is not None:
        s = min(1.0, v.positive("mean_distance", mean_distance) / np.sqrt(dim / 6.0))
        u = 0.5 + s * (u - 0.5)
    return u.astype(np.float32)
