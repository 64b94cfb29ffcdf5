"""What release a ledger of Flower's ``GaussianPrivacyEvent`` s is (the seam below the accountant).

:func:`release_of` reads ``[(event, count), …]`` under a ``flwr.serverapp.PrivacyConfig`` into one
:class:`~reconrisk._src.release.Release`; :func:`cohort_release` says which release each sampling mode
means, and proves the reduction for the refilled cohort of ``no-amplification`` with m < n.
:class:`reconrisk.integrations.flower.ReconRiskAccountant` and the adaptive-clipping wrapper
(``flower_adaptive``) analyse exactly this release.
"""

from __future__ import annotations

from flwr.serverapp import GaussianPrivacyEvent, PrivacyConfig, SamplingMethod, NeighboringRelation

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release

__all__ = ["SAMPLERS", "MODELS", "cohort_release", "release_of"]

#: reconrisk's sampler for each Flower sampling method (see the module docstring); ``no-amplification``
#: is ``"fixed"`` (the refilled cohort, :func:`cohort_release`) unless every round samples every client.
SAMPLERS = {"poisson": "poisson", "without-replacement": "fixed", "no-amplification": "fixed"}


def _sampling(config) -> str:
    return SamplingMethod(config.sampling_method).value



#: The (sampling, relation) pairs analysed here — those Flower's PrivacyConfig accepts (flwr 1.35–1.42).
MODELS = {("poisson", "add-or-remove-one"), ("without-replacement", "replace-one"),
          ("no-amplification", "add-or-remove-one")}


def _check_config(config) -> PrivacyConfig:
    if not isinstance(config, PrivacyConfig):
        raise ReconRiskError(f"config must be a flwr.serverapp.PrivacyConfig; found {type(config).__name__}")
    # the relation is implied by the sampling in every pair analysed; a pair a later Flower allows is refused,
    # not silently analysed under another relation
    pair = (_sampling(config), NeighboringRelation(config.neighboring_relation).value)
    if pair not in MODELS:
        raise ReconRiskError(f"config's (sampling_method, neighboring_relation) must be one of {sorted(MODELS)}; "
                             f"found {pair}")
    return config


def _segment(config: PrivacyConfig, event) -> tuple[float, int, int]:
    """(σ, m, n) of one event, validated against the config."""
    if not isinstance(event, GaussianPrivacyEvent):
        raise ReconRiskError(f"event must be a flwr.serverapp.GaussianPrivacyEvent; found {type(event).__name__}")
    if event.population_size != config.population_size:
        raise ReconRiskError(f"event.population_size must equal the config's population_size={config.population_size}; "
                             f"found {event.population_size}")
    sigma = v.noise_multiplier("noise_multiplier", event.noise_multiplier)
    m = v.integer("event.sample_size", event.sample_size, minimum=1)
    if m > event.population_size:
        raise ReconRiskError(f"event.sample_size must be <= population_size={event.population_size}; found {m}")
    return sigma, m, event.population_size


def cohort_release(segments, sampling: str) -> Release:
    """The release of rounds ``[(σ, m, n, T), …]`` (σ: noise std on the sum / C; m of n clients a round).

    ``poisson``: ``Release(σ, m/n)`` per segment; ``without-replacement``: ``fixed_batch(σ, m, n)``.

    ``no-amplification`` (add-or-remove-one), the mode Flower's DP wrappers account. With m = n
    in every round, every client is in every cohort and removing one moves the sum by ≤ C: the
    Gaussian mechanism, ``Release(σ, 1, T)``, exact. With m < n the strategy samples m clients
    from whoever is there, so when the target is removed its slot is **refilled**:

    *Reduction.* Let D hold the target t and the n − 1 others, D′ = D without t, p = m/n.
    Draw R, a uniform (m − 1)-subset of the others, and j, uniform among the others outside R.
    Then R ∪ {t} with probability p, R ∪ {j} otherwise, is D's cohort (uniform m-subset of n),
    and R ∪ {j} is D′'s (uniform m-subset of the n − 1 others: each such S arises as (S∖{j}) ∪
    {j} for m choices of j, probability m·(n − m − 1)!(m − 1)!/(n − 1)! = 1/C(n − 1, m)). Given
    (R, j), a round releases N(s + x_t, σ²C²) or N(s + x_j, σ²C²) from D (s = the sum over R)
    and N(s + x_j, σ²C²) from D′, where ‖x_t − x_j‖ ≤ 2C. Since D′'s law is exactly D's law
    given t not sampled, each round is the pair ((1 − p)·Q + p·Q₁, Q) with Q₁ and Q coupled at
    replace distance one — the structure of a fixed-size replace-one step (target in the cohort
    with probability p, replaced by another record, sum moved by ≤ 2C). By joint convexity of
    the hockey-stick divergence over (R, j) each round is dominated by (1 − p)N(0, 1) +
    pN(2/σ, 1) against N(0, 1) — the one-step pair of :meth:`Release.fixed_batch` (σ, m, n),
    whose analysis composes the symmetrised curve min{f, f⁻¹}** (Dong, Roth & Su 2022,
    Thm 4.2). That is sound for the refilled cohort, and attained up to the symmetrisation: the
    adversary whose other clients send −C·e and the target +C·e realises the one-direction pair
    exactly (``tests/test_flower.py`` computes its ε by integration, never above this one).
    Rounds with m = n in a ledger that also holds m < n rounds enter at noise multiplier 2σ and
    q = 1 (the fixed-size reading of shift C), so they keep the exact Gaussian. The zero-out
    reference (:mod:`reconrisk._src.measures.rero_zeroout`: the target's update replaced by 0, a shift of
    C over noise σC) reads them at σ, their real noise (``Release.zero_out_segments``): at 2σ sixteen
    full rounds at σ 2 gave ReRo Φ(1) = 0.841 at a prior of 2, where two antipodal candidates reach
    Φ(2) = 0.977 (``tests/test_flower_cohort.py``).
    """
    segs = list(segments)
    if sampling == "poisson":
        return Release.schedule([(s, m / n, t) for s, m, n, t in segs], sampler="poisson")
    if sampling == "no-amplification" and all(m == n for _, m, n, _ in segs):
        return Release.schedule([(s, 1.0, t) for s, m, n, t in segs], sampler="poisson")
    if sampling == "no-amplification":
        rel = Release.schedule([((2.0 * s, 1.0, t) if m == n else (s, m / n, t)) for s, m, n, t in segs],
                               sampler="fixed")
        run: list[tuple[float, float, int]] = []  # the zero-out reference's reading: every round at its own σ
        for s, m, n, t in segs:
            if run and run[-1][:2] == (s, m / n):
                run[-1] = (s, m / n, run[-1][2] + t)
            else:
                run.append((s, m / n, t))
        object.__setattr__(rel, "zero_out_segments", tuple(run))  # (the field documented in Release's docstring)
        return rel
    return Release.schedule([(s, m / n, t) for s, m, n, t in segs], sampler="fixed")


def release_of(config: PrivacyConfig, compositions) -> Release:
    """The :class:`~reconrisk._src.release.Release` of ``[(GaussianPrivacyEvent, count), …]`` under ``config``
    (:func:`cohort_release`)."""
    config = _check_config(config)
    what = "compositions must be a list of (GaussianPrivacyEvent, count); found"
    if isinstance(compositions, (str, bytes)) or not hasattr(compositions, "__iter__"):
        raise ReconRiskError(f"{what} {type(compositions).__name__}")
    pairs = list(compositions)
    for item in pairs:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ReconRiskError(f"{what} an item {item!r}")
    segs = [(*_segment(config, e), v.integer("count", c, minimum=1)) for e, c in pairs]
    if not segs:
        raise ReconRiskError("compositions must hold at least one (event, count); found none")
    return cohort_release(segs, _sampling(config))
