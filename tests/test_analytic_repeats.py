"""``simulate_success(repeats=R)``: R independent attacks per sample, the data kept on the device (seed 003)."""

from __future__ import annotations

import numpy as np
import pytest

from reconrisk._src.attacks import analytic as atk
from reconrisk.errors import ReconRiskError

X = np.random.default_rng(3).random((3, 40))
ROWS, CLIP = 5, 2.0  # M ≥ (C/‖X‖)² for every sample: the optimal regime, variance σ²‖X‖²


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch):
    """7 rows per explicit chunk everywhere in this file: several chunks per run, and one compilation per source shape."""
    monkeypatch.setattr(atk, "_ELEMENTS_PER_CHUNK", ROWS * X.shape[1] * 7)


# explicit: the resident and the chunked data are two compiled programs: their equal bits are a claim about the
# production build
@pytest.mark.parametrize("mode", [pytest.param("explicit", marks=pytest.mark.production_xla), "law", "fast"])
def test_repeats_equal_repeated_data(mode, monkeypatch):
    """Row i·R + j of a repeated run is row i·R + j of a run on the data repeated R times (same keys, same numbers)."""
    pytest.importorskip("jax") if mode == "explicit" else None
    a = atk.simulate_success(X, [0.05, 0.3], CLIP, ROWS, mode=mode, seed=4, repeats=4)
    monkeypatch.setattr(atk, "_RESIDENT_BYTES", 0)  # the repeated data goes chunk by chunk (the compiled shape of the next test)
    b = atk.simulate_success(np.repeat(X, 4, axis=0), [0.05, 0.3], CLIP, ROWS, mode=mode, seed=4)
    assert a.mse.shape == (2, 12)
    for k in ("mse", "psnr", "ncc", "variance", "norms"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert len(np.unique(a.mse[0, :4])) == 4  # the draws of one sample differ


@pytest.mark.production_xla
def test_explicit_resident_and_chunked_sources_agree(monkeypatch):
    """Data sent once (resident) and data sent chunk by chunk give the same bits, across several chunks."""
    pytest.importorskip("jax")
    a = atk.simulate_success(X, [0.2], CLIP, ROWS, mode="explicit", seed=1, repeats=4)  # 12 rows in 2 chunks
    monkeypatch.setattr(atk, "_RESIDENT_BYTES", 0)
    b = atk.simulate_success(X, [0.2], CLIP, ROWS, mode="explicit", seed=1, repeats=4)
    np.testing.assert_array_equal(a.mse, b.mse)
    np.testing.assert_array_equal(a.ncc, b.ncc)


def test_repeats_mean_mse_matches_theory():
    """200 draws of each sample: each sample's mean MSE within 4 SE of σ²‖X‖² (the law's mean, v·χ²_N/N)."""
    pytest.importorskip("jax")
    sim = atk.simulate_success(X, [0.1], CLIP, ROWS, mode="explicit", seed=2, repeats=200)
    v = 0.01 * np.sum(X * X, axis=1)
    mean = sim.mse[0].reshape(3, 200).mean(axis=1)
    se = v * np.sqrt(2 / X.shape[1]) / np.sqrt(200)
    assert np.all(np.abs(mean - v) < 4 * se)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_repeats_validated(bad):
    with pytest.raises(ReconRiskError, match="repeats"):
        atk.simulate_success(X, [0.1], 1.0, 1, repeats=bad)


def test_repeats_cap():
    with pytest.raises(ReconRiskError, match="repeats"):
        atk.simulate_success(X, [0.1], 1.0, 1, repeats=10**8)


def test_cli_repeats_and_law_mode(tmp_path):
    """`analytic simulate --mode law --repeats R`: R rows per sample, counted as such in the JSON."""
    import json

    from typer.testing import CliRunner

    from reconrisk._src.cli import app

    res = CliRunner().invoke(app, ["analytic", "simulate", "--mode", "law", "--repeats", "3", "--samples", "4",
                                   "--dim", "8", "--noise-multipliers", "0.1", "--no-figure", "--json",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert (d["mode"], d["samples"], d["repeats"]) == ("law", 4, 3)
    lines = (tmp_path / "simulate.csv").read_text().splitlines()
    assert len(lines) == 1 + 12 and lines[-1].split(",")[1] == "3"  # the last row belongs to sample 3
