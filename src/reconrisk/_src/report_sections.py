"""The sections of the risk report (:class:`reconrisk._src.report_model.RiskReport`): one frozen dataclass per bound
family, each with ``to_dict`` (its part of ``report.json``, keys in the order the report has always written them)
and ``from_dict`` (that part read back). A family not computed for a release is :class:`Unavailable`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, Mapping, Union

from .results import Bound

_BOUND_FIELDS = ("quantity", "method", "lower", "upper", "estimate", "confidence", "converged", "formula")


def _real(x: Any) -> Any:
    """A number read from JSON: the strings "inf"/"-inf" (how :func:`reconrisk._src._io.jsonable` writes them) as floats."""
    return float(x) if x in ("inf", "-inf") else x


def bound_from_dict(d: Mapping[str, Any]) -> Bound:
    """The :class:`~reconrisk._src.results.Bound` whose ``to_dict()`` is ``d`` (its details in their order)."""
    return Bound(d["quantity"], _real(d["lower"]), _real(d["upper"]), estimate=d.get("estimate"),
                 confidence=d.get("confidence"), method=d.get("method", ""), formula=d.get("formula", ""),
                 converged=d.get("converged"),
                 details={k: x for k, x in d.items() if k not in _BOUND_FIELDS and k != "width"})


def _short(b: Bound, *keys: str) -> dict:
    """A Bound as the few keys a row of the report shows (``method``, ``lower``, ``upper`` …)."""
    return {k: getattr(b, k) for k in keys}


# -- a family not computed ------------------------------------------------------------------------
@dataclass(frozen=True)
class Unavailable:
    """A family not computed for this release: the one-line ``reason`` (and, for the analytic attack, the
    assumptions it needs). ``applicable`` is False; the page lists it apart with its reason."""

    reason: str
    assumptions: tuple[str, ...] = ()
    applicable = False

    def to_dict(self) -> dict:
        out: dict = {"applicable": False, "reason": self.reason}
        if self.assumptions:
            out["assumptions"] = list(self.assumptions)
        return out


@dataclass(frozen=True)
class BelowCertified(Unavailable):
    """An upper-only baseline below a certified lower end of the same quantity: a numerical failure of its method,
    not shown as a bound (:func:`reconrisk._src.results.below_certified`); ``value`` is what it gave."""

    value: float | None = None
    method: str | None = None

    def to_dict(self) -> dict:
        return {"applicable": False, "reason": self.reason, "value": self.value, "method": self.method}


@dataclass(frozen=True)
class _Pending:
    """The Monte-Carlo row while its draws run (seen only by ``risk_report``'s ``before_monte_carlo``)."""

    applicable = None

    def to_dict(self) -> None:
        return None


#: The Monte-Carlo row not in yet (its place in the report while the draws finish).
MC_PENDING = _Pending()


def _unavailable(d: Mapping[str, Any]) -> Unavailable:
    if "value" in d or "method" in d:
        return BelowCertified(d["reason"], value=_real(d.get("value")), method=d.get("method"))
    return Unavailable(d["reason"], tuple(d.get("assumptions", ())))


def _na_or(d: Mapping[str, Any] | None, read):
    if d is None:
        return MC_PENDING
    return _unavailable(d) if d.get("applicable") is False else read(d)


# -- ε and ReRo --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpsilonEntry:
    """ε at ``delta``: ``bound.upper`` (``value``); ``bound.lower`` the optimistic PLD's ε (PLD accountant only);
    ``bound.method`` the accountant, ``"pld"`` or ``"rdp"`` (where the PLD grid cannot hold the loss range)."""

    bound: Bound
    delta: float

    @property
    def value(self) -> float:
        return self.bound.upper

    @property
    def accountant(self) -> str:
        return self.bound.method

    def to_dict(self) -> dict:
        out: dict = {"value": self.bound.upper}
        if self.accountant == "pld":
            out["lower"] = self.bound.lower
        return {**out, "accountant": self.accountant, "delta": self.delta, "formula": self.bound.formula}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EpsilonEntry":
        return cls(Bound("epsilon", _real(d.get("lower")), _real(d["value"]), method=d["accountant"],
                         formula=d["formula"]), d["delta"])


#: The ReRo rows of the page, in its order, with their labels.
RERO_ROWS = (("closed_form", "exact (GDP closed form)"), ("pld", "PLD bracket"),
             ("rdp", "via Rényi DP, optimal conversion (looser)"), ("dp", "via (ε, δ)-DP (looser)"),
             ("mc", "Monte Carlo estimate"))

Row = Union[Bound, Unavailable]


@dataclass(frozen=True)
class ReroSection:
    """Every ReRo method of ``reconrisk bound`` at κ: the certified PLD bracket, the exact closed form where
    there is one (q = 1), the RDP and (ε, δ) baselines (certified upper ends), and the Monte-Carlo estimate
    (an estimate with its confidence interval). ``headline`` names the row the summary quotes."""

    kappa: float
    prior_size: int | None
    pld: Bound
    rdp: Row
    rdp_hayes2023_eq2: Row
    dp: Row
    mc: Union[Bound, Unavailable, _Pending]
    closed_form: Bound | None = None
    headline: Literal["pld", "closed_form"] = "pld"

    @property
    def head(self) -> Bound:
        """The row the summary quotes (:attr:`headline`)."""
        return getattr(self, self.headline)

    def rows(self):
        """``(key, label, row)`` of the page's ReRo rows, in its order (no closed form: no row)."""
        for key, label in RERO_ROWS:
            r = getattr(self, key)
            if r is not None:
                yield key, label, r

    def to_dict(self) -> dict:
        out: dict = {"kappa": self.kappa, "prior_size": self.prior_size, "pld": self.pld.to_dict()}
        if self.closed_form is not None:
            out["closed_form"] = self.closed_form.to_dict()
        for key in ("rdp", "rdp_hayes2023_eq2"):
            out[key] = getattr(self, key).to_dict()
        out["dp"] = self.dp.to_dict() if isinstance(self.dp, Unavailable) else _short(
            self.dp, "method", "lower", "upper", "formula")
        return {**out, "mc": self.mc.to_dict(), "headline": self.headline}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ReroSection":
        def dp(x):
            return Bound("reconstruction", x["lower"], _real(x["upper"]), method=x["method"], formula=x["formula"])

        return cls(d["kappa"], d["prior_size"], bound_from_dict(d["pld"]),
                   _na_or(d["rdp"], bound_from_dict), _na_or(d["rdp_hayes2023_eq2"], bound_from_dict),
                   _na_or(d["dp"], dp), _na_or(d["mc"], bound_from_dict),
                   bound_from_dict(d["closed_form"]) if "closed_form" in d else None, d["headline"])


def _tuple(x):
    return None if x is None else tuple(x)


@dataclass(frozen=True)
class PriorCurve:
    """ReRo against the prior size N (κ = 1/N): the PLD bracket, the RDP bound (None where it fell below the
    bracket; the whole curve None for an event), Hayes et al.'s Eq. 2 (JSON only) and Fano's bound."""

    prior_size: tuple[int, ...]
    kappa: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    rdp: tuple[float | None, ...] | None
    rdp_method: str | None
    rdp_hayes2023_eq2: tuple[float | None, ...] | None
    fano: tuple[float, ...] | None

    def to_dict(self) -> dict:
        return {f.name: (list(x) if isinstance(x := getattr(self, f.name), tuple) else x) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PriorCurve":
        return cls(**{f.name: (_tuple(d[f.name]) if f.name != "rdp_method" else d[f.name]) for f in fields(cls)})


@dataclass(frozen=True)
class TradeoffEntry:
    """The certified trade-off curve on ``reconrisk tradeoff``'s α grid: ``beta_lower ≤ f(α) ≤ beta_upper`` and
    the same as true-positive rates (``power_*`` = 1 − f)."""

    method: str
    alpha: tuple[float, ...]
    beta_lower: tuple[float, ...]
    beta_upper: tuple[float, ...]
    power_lower: tuple[float, ...]
    power_upper: tuple[float, ...]
    max_width: float
    release: Mapping[str, Any] | None
    details: Mapping[str, Any]
    formula: str

    def to_dict(self) -> dict:
        return {f.name: (list(x) if isinstance(x := getattr(self, f.name), tuple) else x) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TradeoffEntry":
        return cls(**{f.name: (tuple(d[f.name]) if isinstance(d[f.name], list) else d[f.name]) for f in fields(cls)})


@dataclass(frozen=True)
class RiskRow:
    """One operational risk (``reconrisk risk``'s rows): ``measure`` its CLI name, ``bound`` its certified bracket
    (``bound.details["baseline"]``: the blind guess)."""

    measure: str
    bound: Bound

    @property
    def baseline(self) -> float:
        return self.bound.details["baseline"]

    def to_dict(self) -> dict:
        return {"measure": self.measure, **self.bound.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RiskRow":
        return cls(d["measure"], bound_from_dict({k: x for k, x in d.items() if k != "measure"}))


# -- information-theoretic, MSE, analytic and capacity families --------------------------------------
@dataclass(frozen=True)
class FanoEntry:
    """Fano's bound on the success of a uniform prior over ``prior_size`` candidates (certified upper ends),
    from the mutual information bounded as ``information`` says."""

    prior_size: int
    entropy: float
    mutual_information: float
    success_upper: float
    advantage_upper: float
    error_bracket: tuple[float, float]
    formula: str
    information: Mapping[str, Any]
    source: str
    applicable = True

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"applicable": True, **out, "error_bracket": list(self.error_bracket)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FanoEntry":
        return cls(**{**{f.name: d[f.name] for f in fields(cls)}, "error_bracket": tuple(d["error_bracket"])})


@dataclass(frozen=True)
class MseEntry:
    """Guo, Karrer, Chaudhuri & van der Maaten's (2022) lower bound on the MSE of any unbiased attack."""

    rdp_epsilon: float
    diam: float
    mse_lower_bound: float
    log10_mse_lower_bound: float
    std_lower_bound: float
    release: Mapping[str, Any]
    sensitivity: float
    formula: str
    applies_to: str
    applicable = True

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MseEntry":
        return cls(**{f.name: _real(d[f.name]) for f in fields(cls)})


@dataclass(frozen=True)
class AnalyticEntry:
    """Riess et al.'s (2024) optimal analytic attack: ``mse`` and ``psnr`` are ``reconrisk analytic bound
    --json``'s results (their ``rero``: the exact success probability at their ``eta``)."""

    assumptions: tuple[str, ...]
    mse: Mapping[str, Any]
    psnr: Mapping[str, Any]
    formula: str
    applicable = True

    def to_dict(self) -> dict:
        return {"applicable": True, "assumptions": list(self.assumptions), "mse": dict(self.mse),
                "psnr": dict(self.psnr), "formula": self.formula}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AnalyticEntry":
        return cls(tuple(d["assumptions"]), d["mse"], d["psnr"], d["formula"])


@dataclass(frozen=True)
class CapacityStep:
    """Bayes' capacity of one (σ, q) segment's step: ``log_capacity_step`` (full batch) and subsampled."""

    noise_std: float
    radius: float
    dim: int
    log_capacity_step: float
    log_capacity_subsampled_step: float
    steps: int


@dataclass(frozen=True)
class CapacityEntry:
    """Bayes' capacity of the T steps and the one-try success it allows, ``κ·C`` (Biswas et al. 2024)."""

    log_capacity: float
    segments: tuple[CapacityStep, ...]
    success_upper: float
    log10_success_upper: float
    formula: str
    applicable = True

    def to_dict(self) -> dict:
        return {"applicable": True, "log_capacity": self.log_capacity,
                "segments": [{f.name: getattr(s, f.name) for f in fields(s)} for s in self.segments],
                "success_upper": self.success_upper, "log10_success_upper": self.log10_success_upper,
                "formula": self.formula}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CapacityEntry":
        return cls(_real(d["log_capacity"]), tuple(CapacityStep(**s) for s in d["segments"]), d["success_upper"],
                   d["log10_success_upper"], d["formula"])


# -- calibration and the empirical attack --------------------------------------------------------------
@dataclass(frozen=True)
class CalibrationEntry:
    """``calibrate --target-rero`` at this (q, T): the smallest σ whose certified ReRo ``rero`` meets the target,
    ε there, and whether this release meets it (decided by its own certified bound, ``current_rero``)."""

    target_rero: float
    kappa: float
    prior_size: int | None
    noise_multiplier: float
    sample_rate: float
    steps: int
    noise_multiplier_bracket: tuple[float, float]
    evaluations: int
    rero: Bound
    delta: float
    epsilon: float
    formula: str
    current_noise_multiplier: float
    current_rero: Bound
    meets_target_now: bool
    applicable = True

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(noise_multiplier_bracket=list(self.noise_multiplier_bracket),
                   rero=_short(self.rero, "method", "lower", "upper"),
                   current_rero=_short(self.current_rero, "method", "lower", "upper"))
        return {"applicable": True, **out}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CalibrationEntry":
        def b(x):
            return Bound("reconstruction", x["lower"], x["upper"], method=x["method"])

        return cls(**{**{f.name: d[f.name] for f in fields(cls)}, "rero": b(d["rero"]),
                      "current_rero": b(d["current_rero"]),
                      "noise_multiplier_bracket": tuple(d["noise_multiplier_bracket"])})


#: The keys the report adds to the audit's own result (``reconrisk audit``'s JSON).
_ATTACK_KEYS = ("applicable", "dataset", "model", "formula")


@dataclass(frozen=True)
class AttackEntry:
    """``reconrisk audit`` at this release: ``audit`` is its result as that command's JSON (rates with their
    Clopper–Pearson intervals, the empirical lower bounds they refute), on ``dataset`` with ``model``."""

    audit: Mapping[str, Any]
    dataset: str
    model: str
    formula: str
    applicable = True

    @property
    def rates(self) -> Mapping[str, Mapping[str, Any]]:
        """Each attack's success rate (``successes``, ``trials``, ``rate``, ``ci_low``, ``ci_high``)."""
        return self.audit["attacks"]

    @property
    def empirical(self) -> Mapping[str, Mapping[str, Any]]:
        """Each attack's empirical lower bounds (``rero``, ``epsilon``), where the audit made them."""
        return self.audit.get("empirical_attacks", {})

    @property
    def primary(self) -> tuple[str, Mapping[str, Any]]:
        """The audit's headline attack: its name and rate."""
        return self.audit["attack_name"], self.audit["attack"]

    @property
    def prior_size(self) -> int:
        return self.audit["prior_size"]

    def to_dict(self) -> dict:
        return {**self.audit, "applicable": True, "dataset": self.dataset, "model": self.model, "formula": self.formula}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AttackEntry":
        return cls({k: x for k, x in d.items() if k not in _ATTACK_KEYS}, d["dataset"], d["model"], d["formula"])


