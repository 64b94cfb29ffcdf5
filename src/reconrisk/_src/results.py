"""The one result shape of reconrisk: a frozen :class:`Bound`.

Every certified number (a two-sided bracket from the privacy-loss
distributions, an exact closed form, an upper bound only, a Monte-Carlo
confidence interval, an empirical lower bound from an audit) is a
:class:`Bound`. Its fields say what a reader needs to trust it:

``lower``, ``upper``
    The interval that contains the quantity (``None`` where one side is not
    bounded: an RDP conversion gives an upper end only, an audit a lower end
    only). For an exact value ``lower == upper``. For a certified bound the quantity is the *bound*
    (e.g. B_κ of the theorem's dominating pair): ``lower`` is the lower end of the bound's numerical
    bracket, not a lower bound on the risk of the run (docs/reference/guarantees.md).
``estimate``, ``confidence``
    A point estimate and the level of the interval when the interval is a
    confidence interval (Monte Carlo, attacks); ``None`` for certified
    brackets, which hold with certainty.
``method``, ``formula``
    How it was computed (``"pld"``, ``"closed_form"``, ``"rdp"``, ``"mc"``, …)
    and the formula with its source, cited by the papers' authors.
``converged``
    Whether a bracket met its width target (the ends are certified either way).
``details``
    Everything measure-specific (κ, the prior size, the discretisation, the
    order of an RDP conversion, …), flattened into :meth:`to_dict`.

``quantity`` names what is bounded (``"reconstruction"``, ``"epsilon"``,
``"membership_advantage"``, …).

The vocabulary of every public result: a certified (or empirical) number is read as
``result.<quantity>.upper`` / ``.lower`` of a :class:`Bound` field, never as a scalar field
spelt ``<quantity>_upper``. A result with one headline number calls its field ``bound``
(:class:`~reconrisk._src.analysis.calibrate.Calibration`, :class:`~reconrisk._src.theory.analytic.AnalyticBound`);
other fields are named by their quantity (``FanoBound.success``, ``MseBound.mse``,
``EmpiricalAudit.rero``, ``TradeOff.power``, ``VmfEpsilon.approach2``, ``LogRegFIL.rdp_mse``). A number that
is neither end (the VMF ε with Biswas et al.'s 2024 interpolation between orders) is an ``estimate`` with
both ends open. A curve's bracket (:class:`~reconrisk._src.measures.tradeoff.TradeOff`)
holds arrays as its ends, one per α. The scalar spellings of earlier releases
(``success_upper``, ``beta_upper``, ``power_upper``, ``certified_rero_upper``, ``rero_upper``,
``mse_lower_bound``, ``AnalyticBound.rero``, ``rdp_mse_bound``, ``VmfEpsilon.epsilon``, …) still read, with a
:class:`DeprecationWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple


@dataclass(frozen=True)
class Bound:
    """``lower ≤ quantity ≤ upper`` (certified, or at level ``confidence`` when that is set)."""

    quantity: str
    lower: float | None
    upper: float | None
    estimate: float | None = None
    confidence: float | None = None
    method: str = ""
    formula: str = ""
    converged: bool | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> float | None:
        """``upper − lower`` (``None`` when one side is open)."""
        if self.lower is None or self.upper is None:
            return None
        return self.upper - self.lower

    @property
    def exact(self) -> bool:
        if self.lower is None or self.upper is None or self.confidence is not None:
            return False
        same = self.lower == self.upper  # element-wise for a curve's bracket (TradeOff.beta, TradeOff.power)
        return bool(same.all()) if hasattr(same, "all") else bool(same)

    def __getattr__(self, name: str) -> Any:
        # measure-specific fields (kappa, prior_size, baseline, discretization, …) read like attributes
        details = self.__dict__.get("details")
        if details is not None and name in details:
            return details[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fixed fields, ``width``, then ``details`` flattened (a detail never hides a field)."""
        out: dict[str, Any] = {
            "quantity": self.quantity, "method": self.method, "lower": _plain(self.lower),
            "upper": _plain(self.upper), "width": _plain(self.width), "estimate": self.estimate,
            "confidence": self.confidence, "converged": self.converged, "formula": self.formula,
        }
        for k, x in self.details.items():
            out.setdefault(k, _plain(x))
        return out


def _plain(x: Any) -> Any:
    """A NumPy array (the ends of a curve's bracket) as a list; anything else unchanged."""
    return x.tolist() if type(x).__name__ == "ndarray" else x


#: Slack for rounding when an upper end is held against another method's lower end of the same quantity.
CONSISTENCY_TOL = 1e-9


def below_certified(upper: float | None, lower: float | None, *, what: str, against: str) -> str | None:
    """Why ``upper`` cannot be shown as an upper bound: it lies below ``lower``, another method's certified lower
    end of the same quantity (a numerical failure of the method that gave ``upper``); None when consistent.

    Every reported upper value must be ≥ every other method's lower end; a number that breaks this is shown as
    unavailable with this reason instead of as a bound.
    """
    if upper is None or lower is None or not (upper < lower - CONSISTENCY_TOL):
        return None
    return (f"{what} unavailable: its value {upper:.6g} is below the certified lower end {lower:.6g} ({against}), "
            "a numerical failure of that method at these parameters")


class Support(NamedTuple):
    """The answer of a ``supports`` question (an analysis's, a mechanism's): ``ok``, and ``reason`` (one line)
    where it is not; truthy when ok."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.ok)
