"""Datasets: embedded digits, IDX and CIFAR-10 readers (on small files written here), priors."""

from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk._src.data import (
    load_cifar10,
    load_dataset,
    load_digits,
    load_mnist,
    mean_pairwise_distance,
    parse_idx,
    read_idx,
    safe_unpickle,
    uniform_noise_prior,
)
from reconrisk.errors import ReconRiskError


def idx_bytes(arr: np.ndarray, code: int = 0x08) -> bytes:
    head = bytes([0, 0, code, arr.ndim]) + b"".join(struct.pack(">I", s) for s in arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write_mnist(tmp_path, n=7, h=28, w=28, gz=False, prefix="train"):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    for name, arr in ((f"{prefix}-images-idx3-ubyte", images), (f"{prefix}-labels-idx1-ubyte", labels)):
        raw = idx_bytes(arr)
        if gz:
            (tmp_path / (name + ".gz")).write_bytes(gzip.compress(raw))
        else:
            (tmp_path / name).write_bytes(raw)
    return images, labels


def test_digits_embedded():
    d = load_digits()
    assert d.x.shape == (1797, 64) and d.x.dtype == np.float32
    assert d.x.min() == 0.0 and d.x.max() == 1.0
    assert set(np.unique(d.y)) == set(range(10))
    assert d.image_shape == (8, 8, 1)
    # pixel values are k/16 exactly
    assert np.allclose(d.x * 16, np.round(d.x * 16))


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_roundtrip(tmp_path, gz):
    images, labels = write_mnist(tmp_path, gz=gz)
    d = load_mnist(tmp_path)
    assert d.x.shape == (7, 784) and d.image_shape == (28, 28, 1)
    np.testing.assert_allclose(d.x, images.reshape(7, -1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d.y, labels)
    assert load_dataset(f"mnist:{tmp_path}").x.shape == (7, 784)
    # the images file itself also works
    d2 = load_mnist(tmp_path / ("train-images-idx3-ubyte" + (".gz" if gz else "")))
    np.testing.assert_array_equal(d2.y, labels)


def test_idx_other_types():
    arr = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    np.testing.assert_array_equal(parse_idx(idx_bytes(arr, 0x0C)), arr)
    f = np.linspace(0, 1, 6).reshape(2, 3)
    np.testing.assert_allclose(parse_idx(idx_bytes(f, 0x0E)), f)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\x00\x08",
        b"\x01\x00\x08\x01\x00\x00\x00\x01\x05",  # bad magic
        b"\x00\x00\x07\x01\x00\x00\x00\x01\x05",  # unknown type code
        b"\x00\x00\x08\x00",  # zero dimensions
        b"\x00\x00\x08\x02\x00\x00\x00\x02",  # header truncated
        b"\x00\x00\x08\x01\x00\x00\x00\x03\x01\x02",  # data truncated
        b"\x00\x00\x08\x01\x00\x00\x00\x01\x01\x02",  # trailing bytes
    ],
)
def test_malformed_idx(raw):
    with pytest.raises(ReconRiskError):
        parse_idx(raw)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_idx_parser_never_crashes(raw):
    try:
        out = parse_idx(raw)
    except ReconRiskError:
        return
    assert isinstance(out, np.ndarray)


def test_mnist_errors(tmp_path):
    with pytest.raises(ReconRiskError, match="does not exist"):
        load_dataset(f"mnist:{tmp_path / 'nope'}")
    with pytest.raises(ReconRiskError, match="no file named"):
        load_mnist(tmp_path)
    write_mnist(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(ReconRiskError, match="labels"):
        load_mnist(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(ReconRiskError, match="gzip"):
        load_mnist(tmp_path)


def write_cifar(path, n=5, protocol=2, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = [int(c) for c in rng.integers(0, 10, n)]
    batch = {"batch_label": "training batch 1 of 5", "labels": labels, "data": data,
             "filenames": [f"img_{i}.png" for i in range(n)]}
    path.write_bytes(pickle.dumps(batch, protocol=protocol))
    return data, labels


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar_roundtrip(tmp_path, protocol):
    data, labels = write_cifar(tmp_path / "data_batch_1", protocol=protocol)
    write_cifar(tmp_path / "data_batch_2", n=3, protocol=protocol, seed=1)
    d = load_cifar10(tmp_path)
    assert d.x.shape == (8, 3072) and d.image_shape == (32, 32, 3)
    # channel-first rows become HWC images
    img0 = data[0].reshape(3, 32, 32).transpose(1, 2, 0).reshape(-1) / 255.0
    np.testing.assert_allclose(d.x[0], img0, rtol=1e-6)
    np.testing.assert_array_equal(d.y[:5], labels)
    assert load_dataset(f"cifar10:{tmp_path / 'data_batch_1'}").x.shape == (5, 3072)


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("touch /tmp/reconrisk_pwned",))


def test_cifar_refuses_code(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({"data": _Evil(), "labels": []}))
    with pytest.raises(ReconRiskError, match="refusing"):
        load_cifar10(tmp_path)
    with pytest.raises(ReconRiskError):
        safe_unpickle(pickle.dumps(np.array([object()], dtype=object)))
    with pytest.raises(ReconRiskError, match="not a readable pickle"):
        safe_unpickle(b"garbage")


def test_cifar_bad_content(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({"data": np.zeros((2, 10), np.uint8), "labels": [0, 1]}))
    with pytest.raises(ReconRiskError, match="3072"):
        load_cifar10(tmp_path)
    with pytest.raises(ReconRiskError, match="no CIFAR-10 batch"):
        load_cifar10(tmp_path / "..")


@pytest.mark.parametrize("spec", ["", "foo", "mnist", "mnist:", "imagenet:/tmp", "cifar100:/tmp"])
def test_unknown_dataset(spec):
    with pytest.raises(ReconRiskError):
        load_dataset(spec)


def test_uniform_noise_prior():
    rng = np.random.default_rng(0)
    d = load_digits()
    m = mean_pairwise_distance(d.x, rng)
    u = uniform_noise_prior(500, 64, rng, mean_distance=m * 0.5)
    assert u.min() >= 0 and u.max() <= 1 and u.shape == (500, 64)
    assert abs(mean_pairwise_distance(u, rng) - m * 0.5) < 0.05 * m
    with pytest.raises(ReconRiskError):
        uniform_noise_prior(0, 64, rng)


def test_read_idx_missing(tmp_path):
    with pytest.raises(ReconRiskError, match="not found"):
        read_idx(tmp_path / "x")
