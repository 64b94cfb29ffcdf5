"""The ReRo bound for DP-SGD: γ = B_κ(μ_{T,σ,q}, ν_{T,σ}) (seed 000, Cor. 4).

B_κ(μ, ν) = sup{P_μ[E] : P_ν[E] ≤ κ} is the blow-up function (seed 000,
Eq. 3); μ is the T-fold product of (1−q)N(0,σ²) + qN(1,σ²) and ν = N(0,σ²I_T).
The bound depends only on (σ, q, T, κ) — not on the clip norm, the model or
the data. Methods:

``closed_form``
    q = 1: B = Φ(Φ⁻¹(κ) + √T/σ) (μ_GDP = √T/σ Gaussian DP; for a schedule,
    μ² = Σ T_i/σ_i²). T = 1, any q: the likelihood ratio is monotone, so
    B = (1−q)κ + qΦ(Φ⁻¹(κ) + 1/σ). Exact; ``lower == upper``.
``pld`` (default)
    A certified bracket from pessimistic and optimistic privacy-loss
    distributions (:mod:`reconrisk.accounting.pld`):
    B_κ = inf_ε [e^ε κ + δ_{μ‖ν}(ε)], the infimum taken exactly over ε
    (not on a grid). The discretisation is refined until the bracket is
    narrower than ``tol``. For q = 1 the exact closed form is used.
``mc``
    Seed 000 Algorithm 1, corrected (:mod:`reconrisk.bounds.montecarlo`), with
    a confidence interval at level ``confidence``.
``rdp``
    The Rényi-DP baseline (:mod:`reconrisk.bounds.conversions`): an upper bound only
    (``lower`` is ``None``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release
from ..accounting import pld as _pld
from ..accounting.gaussian import release_gdp_mu
from .montecarlo import mc_rero
from .conversions import rdp_rero_bound

METHODS = ("pld", "closed_form", "mc", "rdp")
#: Default target width of the PLD bracket.
DEFAULT_TOL = 1e-3
#: Coarsest and finest loss discretisation tried by the PLD bracket.
H_START = 1e-3
H_FINEST = 2e-6
#: Refinement stops before a step's loss grid would exceed this many atoms.
MAX_REFINED_ATOMS = 2_000_000


@dataclass(frozen=True)
class ReroBound:
    """A bound on the probability γ that an informed adversary reconstructs the target.

    ``lower``/``upper`` bracket the exact blow-up value B_κ (for ``mc`` they are a
    confidence interval at level ``confidence``; for ``rdp`` only ``upper`` is
    set). ``estimate`` is the point estimate of ``mc``.
    """

    method: str
    kappa: float
    lower: float | None
    upper: float
    estimate: float | None = None
    confidence: float | None = None
    release: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)

    @property
    def width(self) -> float | None:
        return None if self.lower is None else self.upper - self.lower

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["width"] = self.width
        return d


def closed_form(release: Release, kappa: np.ndarray) -> np.ndarray:
    """Exact B_κ where a closed form exists (all q = 1, or a single step)."""
    segs = release.segments
    if release.full_batch:
        return special.ndtr(special.ndtri(kappa) + release_gdp_mu(release))
    if len(segs) == 1 and segs[0].steps == 1:
        s = segs[0]
        q = s.sample_rate
        return (1 - q) * kappa + q * special.ndtr(special.ndtri(kappa) + 1.0 / s.noise_multiplier)
    raise ReconRiskError(
        "method 'closed_form' needs sample_rate == 1 (full batch) or steps == 1; "
        f"found sample_rate={[s.sample_rate for s in segs]}, steps={release.steps}"
    )


def has_closed_form(release: Release) -> bool:
    segs = release.segments
    return release.full_batch or (len(segs) == 1 and segs[0].steps == 1)


def pld_bracket(
    release: Release, kappa: np.ndarray, *, tol: float = DEFAULT_TOL, discretization: float | None = None
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Certified [lower, upper] on B_κ from privacy-loss distributions.

    With ``discretization`` given, that loss grid is used once; otherwise the
    grid starts at min(1e-3, 0.05/√T) and is halved until the widest bracket
    over ``kappa`` is ≤ ``tol``, or until a finer grid would exceed
    ``MAX_REFINED_ATOMS`` atoms per step (small σ with a wide loss range); the
    achieved width is reported in the details either way, and both ends stay
    certified.
    """
    if release.full_batch:
        exact = closed_form(release, kappa)
        return exact, exact, {"discretization": None, "note": "q = 1: exact Gaussian-DP closed form"}
    h = discretization if discretization is not None else start_discretization(release)
    cap = loss_cap(kappa)
    while True:
        upper_pmf = _pld.compose_segments(release.segments, h, pessimistic=True, loss_cap=cap)
        lower_pmf = _pld.compose_segments(release.segments, h, pessimistic=False, loss_cap=cap)
        upper = np.maximum(upper_pmf.blowup(kappa), kappa)
        lower = np.minimum(np.maximum(lower_pmf.blowup(kappa), kappa), upper)
        width = float(np.max(upper - lower))
        if discretization is not None or width <= tol or h / 2 < H_FINEST:
            break
        if _atoms_per_step(release, h / 2) > MAX_REFINED_ATOMS:
            break  # the bracket stays certified; only its width misses the target
        h /= 2
    return lower, upper, {"discretization": h, "max_width": width, "target_width": tol}


def loss_cap(kappa: np.ndarray) -> float:
    """Largest privacy loss represented: log(1/κ_min) + 40.

    Atoms above it hold ν-mass below κ·e^{-40}, so they sit inside the
    Neyman–Pearson set whether they are moved to +∞ (upper end) or onto the
    cap (lower end); capping keeps huge compositions (large T, small σ) cheap.
    """
    return float(-np.log(np.min(kappa))) + 40.0


def start_discretization(release: Release) -> float:
    """First loss grid of the bracket: min(1e-3, 0.05/√T) (the error grows like T·h²)."""
    return min(H_START, 0.05 / math.sqrt(release.steps))


def _atoms_per_step(release: Release, h: float) -> float:
    worst = 0.0
    for s in release.segments:
        lo, hi, _, _ = _pld._loss_range(s.noise_multiplier, s.sample_rate, "remove")
        worst = max(worst, (min(hi, _pld.MAX_LOSS) - lo) / h)
    return worst


def pld_upper(release: Release, kappa: np.ndarray, discretization: float | None = None) -> np.ndarray:
    """The certified upper end alone (pessimistic PLD on one grid); used by calibration."""
    if release.full_batch:
        return closed_form(release, kappa)
    h = discretization if discretization is not None else start_discretization(release)
    pmf = _pld.compose_segments(release.segments, h, pessimistic=True, loss_cap=loss_cap(kappa))
    return np.maximum(pmf.blowup(kappa), kappa)


def rero_bounds(
    release: Release,
    kappa,
    *,
    method: str = "pld",
    samples: int | None = None,
    seed=None,
    confidence: float = 0.95,
    tol: float = DEFAULT_TOL,
    progress: Callable[[int], None] | None = None,
) -> list[ReroBound]:
    """ReRo bounds of a :class:`Release` for one or many κ (vectorised)."""
    if not isinstance(release, Release):
        raise ReconRiskError(f"release must be a reconrisk.Release; found {type(release).__name__}")
    method = v.choice("method", method, METHODS)
    kappas, _ = v.kappa_array("kappa", kappa)
    confidence = v.probability_open("confidence", confidence)
    tol = v.positive("tol", tol)
    rel = release.to_dict()
    out: list[ReroBound] = []
    if method == "closed_form":
        val = closed_form(release, kappas)
        return [ReroBound("closed_form", float(k), float(x), float(x), release=rel) for k, x in zip(kappas, val)]
    if method == "pld":
        lo, up, det = pld_bracket(release, kappas, tol=tol)
        return [ReroBound("pld", float(k), float(a), float(b), release=rel, details=det) for k, a, b in zip(kappas, lo, up)]
    if method == "rdp":
        up = rdp_rero_bound(release.segments, kappas)
        note = "exact Eq. (2) (q = 1)" if release.full_batch else "integer orders 2..1024"
        return [ReroBound("rdp", float(k), None, float(b), release=rel, details={"orders": note}) for k, b in zip(kappas, up)]
    # Monte Carlo
    samples = v.integer("samples", 1_000_000 if samples is None else samples, minimum=100)
    res = mc_rero(release.segments, kappas, samples=samples, seed=seed, confidence=confidence, progress=progress)
    det = {"samples": samples, "seed": seed, "dkw_tau": res["dkw_tau"]}
    for i, k in enumerate(kappas):
        out.append(
            ReroBound(
                "mc", float(k), float(res["lower"][i]), float(res["upper"][i]), estimate=float(res["estimate"][i]),
                confidence=confidence, release=rel, details=det,
            )
        )
    return out
