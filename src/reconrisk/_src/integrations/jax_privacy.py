"""jax-privacy (``pip install reconrisk[jax-privacy]``): :class:`ReconRiskAccountant`, a ``DpTrainingAccountant``
answering through reconrisk's certified analysis, and calibration to a reconstruction-risk target.

jax-privacy (Google DeepMind, 2.x) describes a training run by ``jax_privacy.accounting.DpParams`` and accounts it
with a ``DpTrainingAccountant`` (``compute_epsilon(num_updates, dp_params)``); its calibrators
(``calibrate_noise_multiplier``, ``calibrate_num_updates``, ``calibrate_batch_size``) take any such accountant.
:class:`ReconRiskAccountant` is one, so those calibrators drive it unchanged, and :meth:`~ReconRiskAccountant.analysis`
gives the run's reconrisk analysis, from which every measure — ReRo for any prior (Hayes, Mahloujifar & Balle 2023),
membership, re-identification, the trade-off curve — is one call.

How each ``DpParams`` field is read (the run jax-privacy's own ``DpsgdTrainingAccountant`` and
``DpsgdTrainingUserLevelAccountant`` account, read here into reconrisk's terms; :func:`run_steps`):

* ``noise_multipliers`` (a number, or ``[(step, σ), …]``), ``batch_size`` and ``batch_size_scale_schedule``: the
  piecewise-constant schedule over ``num_updates`` steps, one segment per interval on which both are constant;
* ``cycle_length`` c (cyclic Poisson sampling for BandMF; Choquette-Choo et al. 2023): the examples are split into c
  groups of ``num_samples // c`` (the remainder discarded); an example's group is sampled once every c steps at rate
  ``batch_size / (num_samples // c)``, and with the strategy matrix's columns of norm ≤ 1 and at most c bands the
  run is dominated by ⌈T/c⌉ such Poisson-sampled Gaussian steps (jax-privacy's reduction, which needs one σ and
  one batch size);
* ``sampling_method``: ``POISSON`` — add/remove neighbours, :class:`~reconrisk._src.release.Release` with Poisson
  steps (the shared analysis); ``FIXED_BATCH_SIZE`` — replace-one neighbours, a fixed-batch release
  (:meth:`Release.fixed_batch <reconrisk._src.release.Release.fixed_batch>`: ε of pairs composes the symmetrised
  per-step curve, Dong, Roth & Su 2022, Thm 4.2, so an adversary may choose each step's orientation);
* ``truncated_batch_size`` (Poisson only): the truncated-Poisson Gaussian step
  (:mod:`reconrisk._src.mechanisms.truncated_poisson`) over ``num_samples // c`` examples;
* ``examples_per_user`` k > 1 (user-level, as ``DpsgdTrainingUserLevelAccountant``): each step is a Gaussian whose
  sensitivity is the number of the user's examples in the batch, Binomial(k, q) under Poisson sampling — the
  mixture of Gaussians of ``dp_accounting`` (:mod:`reconrisk._src.mechanisms.mixture_gaussians`); no cycles, no
  truncation (as jax-privacy). jax-privacy's fixed-batch user-level reading (sensitivities doubled,
  Hypergeometric(n, k, B), one orientation composed) is refused: a replace-one pair may switch orientation at each
  step (as for example-level fixed batches below), and no symmetrised composition of that mixture is certified here;
* ``is_finite_guarantee=False``: ε = ∞; ``num_updates == 0``: ε = 0 (as every ``DpTrainingAccountant``); a step
  with σ = 0 that samples anyone: ε = ∞.

Numbers may be Python, numpy or jax scalars (jax-privacy passes float32 jax scalars; :func:`plain_params`), a
schedule a list of pairs or an array of (step, σ) rows. Anything else is refused with
:class:`~reconrisk.errors.ReconRiskError` naming the field and its value.

ε is the upper end of the certified bracket of the analysis (the pessimistic PLD on reconrisk's own engine): for a
release ``accountant.compute_epsilon(T, p) == accountant.analysis(T, p).epsilon(p.delta).upper``; for steps
(truncated, user level) the upper end on the analysis's first grid, from the pessimistic PLDs alone (its
``epsilon(delta).upper`` may refine the grid, so it is never larger). Above the PLD's loss cap (ε in the hundreds)
the upper end is the RDP conversion, looser than jax-privacy's PLD value there. The ``dp_accountant_config``
jax-privacy's constructor takes is accepted and unused.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from jax_privacy.accounting import analysis as _jp

from .. import _validate as v
from ..analysis.accountant import shared_analysis
from ..analysis.base import Analysis
from ..analysis.calibrate import calibrate, meets, quantity_bound
from ..analysis.dispatch import analyse_steps
from ..analysis.events import EventAnalysis
from ..errors import ReconRiskError
from ..mechanisms.base import Step
from ..mechanisms.mixture_gaussians import MixtureOfGaussians
from ..mechanisms.samplers import NoAmplification
from ..mechanisms.truncated_poisson import TruncatedPoisson, TruncatedSubsampledGaussian
from ..release import Release
from .jax_privacy_keras import keras_config_for_rero  # noqa: F401  (Keras: re-exported; keras loads when it is called)

POISSON = _jp.SamplingMethod.POISSON
FIXED_BATCH_SIZE = _jp.SamplingMethod.FIXED_BATCH_SIZE

#: How many event analyses (truncated, user-level runs) one process keeps; releases use the shared analysis.
EVENT_ANALYSES = 8


def _number(name: str, value) -> float:
    """A Python float of a number or a 0-d/uniform array (jax-privacy's batch-size schedule yields jax scalars)."""
    try:
        arr = np.unique(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name} must be a number; found {value!r:.80}") from None
    if arr.size != 1:
        raise ReconRiskError(f"{name} must be one number; found {value!r:.80}")
    return float(arr[0])


def _scalar(value):
    """A plain Python int/float for a number or 0-d array (numpy, jax, float32 included); anything else as given."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        return value
    if isinstance(value, numbers.Number) or getattr(value, "ndim", None) == 0:
        try:
            x = np.asarray(value).item()
        except (TypeError, ValueError):
            return value
        return x if isinstance(x, (int, float)) else value
    return value


def plain_params(dp_params):
    """``dp_params`` with jax/numpy scalars as Python numbers and an array of (step, σ) rows as a list of pairs
    (jax-privacy hands float32 jax scalars to accountants); refused where it is not a ``DpParams``."""
    if not isinstance(dp_params, _jp.DpParams):
        raise ReconRiskError(f"dp_params must be a jax_privacy.accounting.DpParams; found {type(dp_params).__name__}")
    p = dp_params
    nm = p.noise_multipliers
    if getattr(nm, "ndim", None) == 2 and getattr(nm, "shape", (0, 0))[1] == 2:
        nm = [(_scalar(t), _scalar(x)) for t, x in np.asarray(nm).tolist()]
    elif isinstance(nm, Sequence) and not isinstance(nm, (str, bytes)):
        nm = [tuple(_scalar(x) for x in item) if isinstance(item, (tuple, list)) else item for item in nm]
    else:
        nm = _scalar(nm)
    fields = ("num_samples", "delta", "batch_size", "examples_per_user", "cycle_length", "truncated_batch_size")
    new = {f: _scalar(getattr(p, f)) for f in fields}
    if nm is p.noise_multipliers and all(new[f] is getattr(p, f) for f in fields):
        return p
    return dataclasses.replace(p, noise_multipliers=nm, **new)


def _timed(name: str, value, cast) -> list[tuple[int, float]]:
    """``[(step, value), …]`` sorted by step, from a number or a sequence of pairs whose first step is 0."""
    if isinstance(value, numbers.Number) or (hasattr(value, "shape") and getattr(value, "ndim", 1) == 0):
        return [(0, cast(name, value))]
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Sequence) or not value:
        raise ReconRiskError(f"{name} must be a number or a non-empty list of (step, value) pairs; found {value!r:.80}")
    out = []
    for i, item in enumerate(value):
        try:
            t, x = item
        except (TypeError, ValueError):
            raise ReconRiskError(f"{name}[{i}] must be a (step, value) pair; found {item!r:.80}") from None
        out.append((v.integer(f"{name}[{i}] step", _number(f"{name}[{i}] step", t), minimum=0), cast(name, x)))
    out.sort(key=lambda p: p[0])
    if out[0][0] != 0:
        raise ReconRiskError(f"{name} must set a value at step 0; its first step is {out[0][0]}")
    if len({t for t, _ in out}) != len(out):
        raise ReconRiskError(f"{name} sets a value twice at one step; found steps {[t for t, _ in out]}")
    return out


def _sigma(name: str, value) -> float:
    return v.in_range(name, _number(name, value), 0.0, v.MAX_NOISE, low_open=False, high_open=False)


def _batch(name: str, value) -> float:
    x = _number(name, value)
    if not (x >= 1 and x == math.floor(x)):
        raise ReconRiskError(f"{name} must be an integer >= 1; found {value!r:.80}")
    return x


def schedule(num_updates: int, dp_params) -> list[tuple[int, float, int]]:
    """``[(steps, σ, batch size), …]``: the run's piecewise-constant noise multiplier and batch size over
    ``num_updates`` steps (changes at or after ``num_updates`` dropped, empty intervals skipped), as jax-privacy
    reads ``noise_multipliers``, ``batch_size`` and ``batch_size_scale_schedule``."""
    nms = _timed("noise_multipliers", dp_params.noise_multipliers, _sigma)
    bss = _timed("batch_size", dp_params.batch_sizes, _batch)
    changes = sorted({t for t, _ in nms} | {t for t, _ in bss})
    changes = [t for t in changes if t < num_updates]
    out = []
    for i, t0 in enumerate(changes):
        t1 = changes[i + 1] if i + 1 < len(changes) else num_updates
        sigma = [x for t, x in nms if t <= t0][-1]
        bs = [x for t, x in bss if t <= t0][-1]
        if out and out[-1][1:] == (sigma, int(bs)):
            out[-1] = (out[-1][0] + t1 - t0, sigma, int(bs))
        else:
            out.append((t1 - t0, sigma, int(bs)))
    return out


def check_params(dp_params) -> None:
    """Refuse, in one line naming the field and its value, what :func:`run_steps` cannot account."""
    p = plain_params(dp_params)
    if p.noise_multipliers is None:
        raise ReconRiskError("DpParams.noise_multipliers must be given (a number or [(step, sigma), ...]); found None")
    v.integer("DpParams.num_samples", p.num_samples, minimum=1)
    v.probability_open("DpParams.delta", p.delta)
    if p.sampling_method not in (POISSON, FIXED_BATCH_SIZE):
        raise ReconRiskError(f"DpParams.sampling_method must be SamplingMethod.POISSON or FIXED_BATCH_SIZE; found "
                             f"{p.sampling_method!r}")
    k = 1 if p.examples_per_user is None else v.integer("DpParams.examples_per_user", p.examples_per_user, minimum=1)
    c = 1 if p.cycle_length is None else v.integer("DpParams.cycle_length", p.cycle_length, minimum=1)
    if k > 1 and p.sampling_method is not POISSON:
        raise ReconRiskError(f"DpParams.sampling_method must be SamplingMethod.POISSON with examples_per_user > 1; "
                             f"found {p.sampling_method!r} (a replace-one pair of users may switch orientation at "
                             "every step, and no symmetrised mixture-of-Gaussians composition is analysed here)")
    if k > 1 and c != 1:
        raise ReconRiskError(f"DpParams.cycle_length must be 1 or None with examples_per_user > 1 (user-level "
                             f"accounting has no cyclic sampling); found cycle_length={p.cycle_length}")
    if p.truncated_batch_size is not None:
        v.integer("DpParams.truncated_batch_size", p.truncated_batch_size, minimum=1)
        if p.sampling_method is not POISSON:
            raise ReconRiskError(f"DpParams.truncated_batch_size is read with SamplingMethod.POISSON only; found "
                                 f"truncated_batch_size={p.truncated_batch_size} with {p.sampling_method!r}")
        if k > 1:
            raise ReconRiskError(f"DpParams.truncated_batch_size must be None with examples_per_user > 1; found "
                                 f"{p.truncated_batch_size}")
    if c != 1:
        if not (isinstance(p.noise_multipliers, numbers.Number) or getattr(p.noise_multipliers, "ndim", 1) == 0):
            raise ReconRiskError(f"DpParams.noise_multipliers must be one number with cycle_length={c} (the BandMF "
                                 f"reduction needs one noise multiplier); found {p.noise_multipliers!r:.80}")
        if p.batch_size_scale_schedule:
            raise ReconRiskError(f"DpParams.batch_size_scale_schedule must be empty with cycle_length={c} (the BandMF "
                                 f"reduction needs one batch size); found {p.batch_size_scale_schedule!r:.80}")
        if c > p.num_samples:
            raise ReconRiskError(f"DpParams.cycle_length must be <= num_samples={p.num_samples}; found {c}")
    _timed("noise_multipliers", p.noise_multipliers, _sigma)
    group = p.num_samples // c
    for _, bs in _timed("batch_size", p.batch_sizes, _batch):
        if bs > group:
            what = f"num_samples // cycle_length = {group}" if c != 1 else f"num_samples = {p.num_samples}"
            raise ReconRiskError(f"DpParams.batch_size must be <= {what} at every step; found {int(bs)}")


def _user_steps(segs, dp_params) -> tuple[Step, ...]:
    from scipy import stats

    n, k = dp_params.num_samples, dp_params.examples_per_user
    out = []
    for t, sigma, bs in segs:
        sens = tuple(float(x) for x in range(k + 1))  # (Poisson only: check_params)
        probs = stats.binom.pmf(range(k + 1), k, bs / n)
        probs = tuple(float(x) for x in probs / probs.sum())
        out.append(Step(MixtureOfGaussians(sigma, sens, probs), NoAmplification(), t))
    return tuple(out)


def run_steps(num_updates: int, dp_params) -> Release | tuple[Step, ...] | None:
    """What the run is, in reconrisk's terms (module docstring): a :class:`~reconrisk._src.release.Release` (Gaussian
    steps, Poisson or fixed batches), else its :class:`~reconrisk._src.mechanisms.base.Step` s; ``None`` where a step
    has σ = 0 and samples someone (nothing is private: ε = ∞)."""
    dp_params = plain_params(dp_params)
    check_params(dp_params)
    num_updates = v.integer("num_updates", _number("num_updates", num_updates), minimum=1, maximum=v.MAX_STEPS)
    segs = schedule(num_updates, dp_params)
    if any(sigma == 0.0 for _, sigma, _ in segs):
        return None
    k = dp_params.examples_per_user or 1
    if k > 1:
        return _user_steps(segs, dp_params)
    c = dp_params.cycle_length or 1
    group = dp_params.num_samples // c
    # BandMF with cyclic Poisson sampling: one participation per cycle, ⌈t/c⌉ per interval (one interval when c > 1)
    parts = [(math.ceil(t / c), sigma, bs) for t, sigma, bs in segs]
    if dp_params.truncated_batch_size is not None:
        return tuple(Step(TruncatedSubsampledGaussian(sigma), TruncatedPoisson(bs / group, group,
                                                                                 dp_params.truncated_batch_size), t)
                     for t, sigma, bs in parts)
    sampler = "fixed" if dp_params.sampling_method is FIXED_BATCH_SIZE else "poisson"
    return Release.schedule([(sigma, bs / group, t) for t, sigma, bs in parts], sampler=sampler)


@lru_cache(maxsize=EVENT_ANALYSES)
def _steps_analysis(steps: tuple[Step, ...]) -> Analysis:
    return analyse_steps(steps)


def run_analysis(num_updates: int, dp_params) -> Analysis:
    """The reconrisk analysis of ``num_updates`` steps of the run ``dp_params`` describes: a release's
    :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` through the shared cache, or the analysis of the run's
    steps (truncated Poisson, user-level: an event analysis, two-sided). A run with σ = 0 is refused."""
    run = run_steps(num_updates, dp_params)
    if run is None:
        raise ReconRiskError("DpParams.noise_multipliers must be > 0 at every step for an analysis; found a step with "
                             "noise multiplier 0 (nothing is private)")
    if isinstance(run, Release):
        return shared_analysis(run)
    return _steps_analysis(run)


class ReconRiskAccountant(_jp.DpTrainingAccountant):
    """A jax-privacy ``DpTrainingAccountant`` whose ε is reconrisk's certified upper end (module docstring).

    ``dp_accountant_config`` (optional) is accepted for jax-privacy's constructor shape and not used: reconrisk's
    own PLD engine composes. Example-level and user-level runs (``examples_per_user`` > 1) are both accounted, so it
    stands for ``DpsgdTrainingAccountant`` and ``DpsgdTrainingUserLevelAccountant``.
    """

    def __init__(self, dp_accountant_config=None) -> None:
        super().__init__(dp_accountant_config)

    def can_calibrate_steps(self) -> bool:
        return True

    def can_calibrate_batch_size(self) -> bool:
        return True

    def can_calibrate_noise_multipliers(self) -> bool:
        return True

    def _validate_dp_params(self, dp_params) -> None:
        check_params(dp_params)

    def _compute_epsilon(self, num_updates, dp_params) -> float:
        dp_params = plain_params(dp_params)
        if run_steps(num_updates, dp_params) is None:
            return math.inf
        a = run_analysis(num_updates, dp_params)
        if isinstance(a, EventAnalysis):  # the upper end on the first grid: the pessimistic PLDs only (the
            d = dp_params.delta           # optimistic ones, for the lower end, cost several times more)
            return float(min(a._both(lambda p: p.epsilon(d), True, a.h), a._alt_epsilon(d)))
        return float(a.epsilon(dp_params.delta).upper)

    def compute_epsilon(self, num_updates, dp_params, allow_approximate_cache: bool = False) -> float:
        """ε at ``dp_params.delta`` after ``num_updates`` steps: 0 before any step, ∞ for a run declared without a
        finite guarantee, else the certified upper end (``analysis(num_updates, dp_params).epsilon(delta).upper``)."""
        dp_params = plain_params(dp_params)
        check_params(dp_params)
        n = _number("num_updates", num_updates)
        if not (n >= 0 and n == math.floor(n)):
            raise ReconRiskError(f"num_updates must be an integer >= 0; found {num_updates!r:.80}")
        if n == 0:
            return 0.0
        if not dp_params.is_finite_guarantee:
            return math.inf
        return self._compute_epsilon(int(n), dp_params)

    def analysis(self, num_updates, dp_params) -> Analysis:
        """The reconrisk analysis of the run (:func:`run_analysis`): ``.rero(kappa)``, ``.risk(measure, …)``,
        ``.tradeoff(alphas)``, ``.epsilon(delta)`` (whose upper end :meth:`compute_epsilon` returns)."""
        dp_params = plain_params(dp_params)
        check_params(dp_params)
        return run_analysis(num_updates, dp_params)


# ---------------------------------------------------------------------------------------------------------------
# Calibration to a risk target, in jax-privacy's calling shape (``jax_privacy.accounting.calibrate``), through
# reconrisk's one calibrator (:func:`reconrisk._src.analysis.calibrate.calibrate`).

def _risk_run(accountant, noise_multipliers, batch_sizes, num_samples, examples_per_user, cycle_length,
              truncated_batch_size, sampling_method) -> tuple[str, int, int]:
    """(sampler, group size, cycle length) of a run the one calibrator searches (one σ, one batch size, Poisson or
    fixed batches, cycles allowed); anything else refused naming the argument."""
    num_samples, cycle_length, examples_per_user, truncated_batch_size = map(
        _scalar, (num_samples, cycle_length, examples_per_user, truncated_batch_size))
    if accountant is not None and not isinstance(accountant, ReconRiskAccountant):
        raise ReconRiskError(f"accountant must be a reconrisk ReconRiskAccountant or None; found "
                             f"{type(accountant).__name__}")
    if not (isinstance(batch_sizes, numbers.Number) or getattr(batch_sizes, "ndim", 1) == 0):
        raise ReconRiskError(f"batch_sizes must be one batch size to calibrate to a risk target (the one calibrator "
                             f"searches homogeneous runs); found {batch_sizes!r:.80}")
    if not (isinstance(noise_multipliers, numbers.Number) or getattr(noise_multipliers, "ndim", 1) == 0):
        raise ReconRiskError(f"noise_multipliers must be one number to calibrate to a risk target; found "
                             f"{noise_multipliers!r:.80}")
    if truncated_batch_size is not None:
        raise ReconRiskError(f"truncated_batch_size must be None to calibrate to a risk target (the one calibrator "
                             f"searches Gaussian releases); found {truncated_batch_size!r}")
    if examples_per_user not in (None, 1):
        raise ReconRiskError(f"examples_per_user must be 1 or None to calibrate to a risk target; found "
                             f"{examples_per_user!r}")
    check_params(_jp.DpParams(noise_multipliers=noise_multipliers, num_samples=num_samples, delta=0.5,
                              batch_size=int(_batch("batch_sizes", batch_sizes)), cycle_length=cycle_length,
                              sampling_method=sampling_method))
    c = cycle_length or 1
    return ("fixed" if sampling_method is FIXED_BATCH_SIZE else "poisson"), int(num_samples) // c, c


def _baseline(measure: str, kappa, prior_size) -> dict:
    given = {k: x for k, x in dict(kappa=kappa, prior_size=prior_size).items() if x is not None}
    if len(given) != 1:
        raise ReconRiskError(f"give exactly one of kappa or prior_size (the prior's baseline); found {sorted(given) or 'none'}")
    return given


def calibrate_noise_multiplier(*, target_rero: float, batch_sizes: int, num_updates: int, num_samples: int,
                               kappa: float | None = None, prior_size: int | None = None, accountant=None,
                               examples_per_user: int | None = None, cycle_length: int | None = None,
                               truncated_batch_size: int | None = None, sampling_method=POISSON,
                               measure: str = "reconstruction", rel_tol: float | None = None) -> float:
    """The smallest noise multiplier whose certified ``measure`` (ReRo by default) at baseline ``kappa`` (or
    ``prior_size``) is at most ``target_rero`` after ``num_updates`` steps — jax-privacy's
    ``calibrate_noise_multiplier`` with ``target_rero, kappa`` in place of ``target_epsilon, target_delta``."""
    sampler, group, c = _risk_run(accountant, 1.0, batch_sizes, num_samples, examples_per_user, cycle_length,
                                  truncated_batch_size, sampling_method)
    t = math.ceil(v.integer("num_updates", _number("num_updates", num_updates), minimum=1,
                            maximum=v.MAX_STEPS) / c)
    bs = int(_batch("batch_sizes", batch_sizes))
    rate = dict(batch_size=bs, dataset_size=group) if sampler == "fixed" else dict(sample_rate=bs / group)
    cal = calibrate(measure, target_rero, "noise_multiplier", steps=t, rel_tol=rel_tol,
                    **rate, **_baseline(measure, kappa, prior_size))
    return float(cal.noise_multiplier)


def calibrate_num_updates(*, target_rero: float, noise_multipliers: float, batch_sizes: int, num_samples: int,
                          kappa: float | None = None, prior_size: int | None = None, accountant=None,
                          examples_per_user: int | None = None, cycle_length: int | None = None,
                          truncated_batch_size: int | None = None, sampling_method=POISSON,
                          measure: str = "reconstruction") -> int:
    """The largest number of updates whose certified ``measure`` meets ``target_rero`` (jax-privacy's
    ``calibrate_num_updates`` shape); with ``cycle_length`` c a multiple of c (the analysis counts ⌈T/c⌉
    participations, so the last cycle is free, as jax-privacy reports)."""
    sampler, group, c = _risk_run(accountant, noise_multipliers, batch_sizes, num_samples, examples_per_user,
                                  cycle_length, truncated_batch_size, sampling_method)
    sigma = _sigma("noise_multipliers", noise_multipliers)
    bs = int(_batch("batch_sizes", batch_sizes))
    rate = dict(batch_size=bs, dataset_size=group) if sampler == "fixed" else dict(sample_rate=bs / group)
    cal = calibrate(measure, target_rero, "steps", noise_multiplier=sigma, **rate,
                    **_baseline(measure, kappa, prior_size))
    return int(cal.steps) * c


def calibrate_batch_size(*, target_rero: float, noise_multipliers: float, num_updates: int, num_samples: int,
                         kappa: float | None = None, prior_size: int | None = None, accountant=None,
                         examples_per_user: int | None = None, cycle_length: int | None = None,
                         truncated_batch_size: int | None = None, sampling_method=POISSON,
                         measure: str = "reconstruction", rel_tol: float | None = None) -> int:
    """The largest batch size whose certified ``measure`` meets ``target_rero`` (jax-privacy's
    ``calibrate_batch_size`` shape): fixed batches exactly (the one calibrator's ``solve="batch_size"``), Poisson
    through the largest sample rate q, rounded down to ⌊q·n⌋ and checked there (the answer is a point at which the
    certified predicate was evaluated and held)."""
    sampler, group, c = _risk_run(accountant, noise_multipliers, 1, num_samples, examples_per_user, cycle_length,
                                  truncated_batch_size, sampling_method)
    sigma = _sigma("noise_multipliers", noise_multipliers)
    t = math.ceil(v.integer("num_updates", _number("num_updates", num_updates), minimum=1,
                            maximum=v.MAX_STEPS) / c)
    base = _baseline(measure, kappa, prior_size)
    if sampler == "fixed":
        return int(calibrate(measure, target_rero, "batch_size", noise_multiplier=sigma, steps=t, dataset_size=group,
                             **base).batch_size)
    cal = calibrate(measure, target_rero, "sample_rate", noise_multiplier=sigma, steps=t, rel_tol=rel_tol, **base)
    bs = math.floor(cal.sample_rate * group)
    while bs >= 1 and not meets(quantity_bound(shared_analysis(Release(sigma, bs / group, t)), cal.quantity, base),
                                target_rero):
        bs -= 1  # (not reached where the bound is monotone in q, as the calibrator's search assumes)
    if bs < 1:
        raise ReconRiskError(f"even batch_size=1 exceeds target_rero={target_rero:g} at noise_multipliers={sigma:g}, "
                             f"num_updates={num_updates}; raise the noise or take fewer updates")
    return bs


# the Monte Carlo estimates for the samplers jax-privacy accounts only by sampling (balls-in-bins, b-min-sep)
from .jax_privacy_estimate import monte_carlo_rero, rero_estimate  # noqa: E402,F401
