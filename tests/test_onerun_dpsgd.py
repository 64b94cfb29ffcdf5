"""The one-run audit of a real DP-SGD run (experiments/onerun.py), small: shapes, determinism, the attack beats
the blind guess when the noise is small, and the lower bounds stay below the certified ones."""

from __future__ import annotations

import pytest

from reconrisk._src.data import load_dataset
from reconrisk.errors import ReconRiskError
from reconrisk._src.release import Release

pytest.importorskip("jax")

from reconrisk._src.experiments.onerun import OneRunSetting, run_onerun  # noqa: E402


def _setting(sigma, **kw):
    return OneRunSetting(Release(sigma, 1.0, 10, 0.1), canaries=60, options=4, known_size=40,
                         guess_counts=(20, 60), **kw)


def test_small_run_is_deterministic_and_sound():
    data = load_dataset("digits")
    a = run_onerun(_setting(0.05), data)
    b = run_onerun(_setting(0.05), data)
    assert [r.guesses for r in a] == [r.guesses for r in b]  # same seed, same guesses
    for r in a:
        d = r.to_dict()
        assert d["threat_model"] in ("transcript", "last_iterate") and d["guess_counts"] == [20, 60]
        eps, mu = r.bounds["epsilon"], r.bounds["gdp_mu"]
        assert eps.quantity == "epsilon" and eps.upper is None and eps.method == "one_run_fdp"
        assert 0 <= eps.lower <= r.certified["epsilon"], "one-run lower bound above the certified replace-one eps"
        assert 0 <= mu.lower <= r.certified["gdp_mu"], "one-run mu lower bound above the certified replace-one mu"
        assert r.certified["epsilon"] > r.certified["epsilon_add_remove"]  # replace-one is the weaker guarantee
    white = a[0]
    assert white.threat_model == "transcript" and white.guesses.correct[-1] > 0.4 * 60  # blind guess: 25 %
    c = run_onerun(_setting(0.05, seed=1), data, threat_models=("transcript",))
    assert c[0].guesses != white.guesses


def test_refuses_what_it_cannot_certify():
    with pytest.raises(ReconRiskError, match="sample_rate must be 1"):
        OneRunSetting(Release(1.0, 0.5, 10, 0.1))
    with pytest.raises(ReconRiskError, match="guess count"):
        OneRunSetting(Release(1.0, 1.0, 10, 0.1), canaries=10, guess_counts=(20,))
    with pytest.raises(ReconRiskError, match="threat_model"):
        run_onerun(_setting(1.0), load_dataset("digits"), threat_models=("black_box",))
