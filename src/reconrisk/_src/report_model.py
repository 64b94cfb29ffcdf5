"""The risk report as a typed object: what ``reconrisk report`` computes, built once, rendered three ways.

:func:`reconrisk._src.experiments.riskreport.risk_report` builds one :class:`RiskReport`; the page
(:mod:`reconrisk._src.report.html`), its figures and the terminal table (``reconrisk report``) read its attributes,
and :meth:`RiskReport.to_dict` is ``report.json`` (plain JSON types, infinities as ``"inf"``), its provenance
(:class:`Provenance`) that of a report built in Python unless the writer gave one. Each family is one of:

* a certified number, a :class:`~reconrisk._src.results.Bound` (or a section holding Bounds and the inputs they are
  for);
* an estimate, named so: the Monte-Carlo row is a Bound with a ``confidence`` (:attr:`ReroSection.mc`);
* :class:`Unavailable` — not computed for this release, with its one-line reason (a baseline that fell below
  a certified lower end is :class:`BelowCertified`, which keeps the value it refused to show).

The Monte-Carlo row while its draws run is :data:`MC_PENDING` (only the ``before_monte_carlo`` callback of
``risk_report`` ever sees it). :meth:`RiskReport.from_dict` reads ``report.json`` back, and ``to_dict`` of what it
reads is that JSON again (tested). :func:`report_schema` is the JSON Schema (draft 2020-12) of ``report.json``,
shipped as ``reconrisk/_data/report.schema.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any, Mapping

from . import _validate as v
from ._deprecated import warn_at_caller
from ._io import jsonable
from .errors import ParameterError, ReconRiskError
from .priors import resolve_kappa
from .report_sections import (  # noqa: F401  (the sections are re-exported: one import for the whole report)
    MC_PENDING, AnalyticEntry, AttackEntry, BelowCertified, CalibrationEntry, CapacityEntry, CapacityStep, EpsilonEntry,
    FanoEntry, MseEntry, PriorCurve, ReroSection, RiskRow, TradeoffEntry, Unavailable, _real, _unavailable,
    bound_from_dict)


# -- the summary, the inputs and the provenance ----------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    """The numbers of the plain-language summary (the page words them): the headline ReRo upper end and its
    method, ε at δ, the membership advantage's upper end, and the calibration's verdict when a target was given."""

    kappa: float
    prior_size: int | None
    rero_upper: float
    method: str
    epsilon: float
    delta: float
    membership_advantage_upper: float | None = None
    target_rero: float | None = None
    calibrated_noise_multiplier: float | None = None
    meets_target_now: bool | None = None

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)[:6]}
        out.update((f.name, x) for f in fields(self)[6:] if (x := getattr(self, f.name)) is not None)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Summary":
        return cls(**{f.name: _real(d[f.name]) for f in fields(cls) if f.name in d})


@dataclass(frozen=True)
class ReportConfig:
    """What a report computes beyond the release; defaults are those of the single commands."""

    prior_size: int | None = None
    kappa: float | None = None
    delta: float = 1e-5
    samples: int = 1_000_000  # Monte Carlo (``bound --samples``); 0 skips it
    seed: int = 0
    confidence: float = 0.95
    fpr: float = 0.01  # membership TPR at this FPR (``risk --fpr``)
    attribute_baseline: float = 0.5  # attribute inference: a binary attribute with a 50/50 prior
    diam: float = 1.0  # Guo's MSE bound: data in [0, 1]^d
    target_rero: float | None = None
    model_dim: int | None = None  # Bayes' capacity: dimension p of the released gradient
    data_dim: int | None = None  # analytic attack: input dimension N
    min_norm: float | None = None  # analytic attack: smallest nonzero data norm m
    mse_eta: float = 0.01  # analytic MSE threshold η (data units²); 0.01 = PSNR 20 dB on [0, 1] data
    psnr_eta: float = 20.0  # analytic PSNR threshold (dB)
    attack: bool = False
    trials: int = 100
    attack_seed: int = 0

    def __post_init__(self) -> None:
        """Every field checked; a bad one raises :class:`~reconrisk.errors.ParameterError` naming it (Python names:
        the CLI adds its flags)."""
        if self.prior_size is None and self.kappa is None:
            object.__setattr__(self, "prior_size", 10)  # Hayes, Mahloujifar & Balle's (2023) default prior (κ = 0.1)
        count = {"model_dim": 10**9, "data_dim": 10**9}
        checks = {
            ("prior_size", "kappa"): lambda: resolve_kappa(self.kappa, self.prior_size),
            ("delta",): lambda: v.probability_open("delta", self.delta),
            ("samples",): lambda: self.samples == 0 or v.integer("samples", self.samples, minimum=100),
            ("seed",): lambda: v.seed("seed", self.seed),
            ("confidence",): lambda: v.probability_open("confidence", self.confidence),
            ("fpr",): lambda: v.probability_open("fpr", self.fpr),
            ("attribute_baseline",): lambda: v.probability_open("attribute_baseline", self.attribute_baseline),
            ("diam",): lambda: v.in_range("diam", self.diam, 0.0, 1e150, high_open=False),
            ("target_rero",): lambda: self.target_rero is None or v.probability_open("target_rero", self.target_rero),
            **{(n,): (lambda n=n: getattr(self, n) is None or v.max_count(
                n, v.integer(n, getattr(self, n), minimum=1), count[n])) for n in count},
            ("min_norm",): lambda: self.min_norm is None or v.positive("min_norm", self.min_norm),
            ("mse_eta",): lambda: v.positive("mse_eta", self.mse_eta),
            ("psnr_eta",): lambda: v.real("psnr_eta", self.psnr_eta),
            ("trials",): lambda: v.max_count("trials", v.integer("trials", self.trials, minimum=1), 10**6,
                                             "informed-adversary trials"),
            ("attack_seed",): lambda: v.seed("attack_seed", self.attack_seed),
        }
        for names, check in checks.items():
            try:
                check()
            except ReconRiskError as exc:
                raise ParameterError(str(exc), names) from None

    @property
    def kappa_value(self) -> float:
        return resolve_kappa(self.kappa, self.prior_size)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class PriorProvenance:
    """Which prior the numbers assume, and whether it was defaulted (not given) — the page warns then."""

    defaulted: bool
    prior_size: int | None
    kappa: float | None


@dataclass(frozen=True)
class Provenance:
    """Where a report came from: the reconrisk version, the command line, the release's source (flags, a file
    and its SHA-256, an Opacus state …, as :func:`reconrisk._src.experiments.release_source.resolve_source` says) and
    the prior (None where the caller did not say whether it was defaulted)."""

    command: str = ""
    release_source: Mapping[str, Any] = field(default_factory=dict)
    prior: PriorProvenance | None = None
    reconrisk_version: str = ""

    def to_dict(self) -> dict:
        out = {"reconrisk_version": self.reconrisk_version, "command": self.command,
               "release_source": dict(self.release_source)}
        if self.prior is not None:
            out["prior"] = {f.name: getattr(self.prior, f.name) for f in fields(self.prior)}
        return out

    @classmethod
    def from_dict(cls, d: "Mapping[str, Any] | Provenance") -> "Provenance":
        if isinstance(d, Provenance):
            return d
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise ReconRiskError(f"provenance has unknown key(s) {', '.join(map(str, unknown))}; expected some of "
                                 f"{', '.join(f.name for f in fields(cls))}")
        prior = d.get("prior")
        return cls(d.get("command", ""), d.get("release_source") or {},
                   PriorProvenance(**prior) if prior else None, d.get("reconrisk_version", ""))


# -- the report ------------------------------------------------------------------------------------------
def _entry(d: Mapping[str, Any], cls):
    return _unavailable(d) if d.get("applicable") is False else cls.from_dict(d)


#: The families a report lists after its risks, each a section type or :class:`Unavailable`.
_FAMILIES = {"fano": FanoEntry, "mse": MseEntry, "analytic": AnalyticEntry, "capacity": CapacityEntry,
             "calibration": CalibrationEntry, "attack": AttackEntry}


@dataclass(frozen=True)
class RiskReport:
    """Every bound family for one release and prior (:func:`reconrisk._src.experiments.riskreport.risk_report`).

    ``release``: the release as run (``Release.to_dict()``) or the ``dp_accounting`` event (``dp_event``,
    ``relation``); ``compositions``: how many privacy-loss distributions the one analysis composed."""

    release: Mapping[str, Any]
    config: ReportConfig
    epsilon: EpsilonEntry
    rero: ReroSection
    rero_vs_prior: PriorCurve
    tradeoff: TradeoffEntry
    risks: tuple[RiskRow, ...]
    fano: FanoEntry | Unavailable
    mse: MseEntry | Unavailable
    analytic: AnalyticEntry | Unavailable
    capacity: CapacityEntry | Unavailable
    calibration: CalibrationEntry | Unavailable
    attack: AttackEntry | Unavailable
    summary: Summary
    compositions: int
    #: where it came from: a report built in Python says so (``release_source = {"source": "python"}``); the CLI's
    #: command line and release file are given to :func:`report_json` / ``write_report``
    provenance: Provenance = field(default_factory=lambda: python_provenance())

    @property
    def is_event(self) -> bool:
        """A ``dp_accounting`` event (no σ, q, T), not a DP-SGD release."""
        return "dp_event" in self.release

    def to_dict(self) -> dict:
        """``report.json``: plain JSON types (infinities as ``"inf"``), valid against :func:`report_schema`."""
        out = {"release": dict(self.release), "config": self.config.to_dict(), "epsilon": self.epsilon.to_dict(),
               "rero": self.rero.to_dict(), "rero_vs_prior": self.rero_vs_prior.to_dict(),
               "tradeoff": self.tradeoff.to_dict(), "risks": [r.to_dict() for r in self.risks]}
        out.update((k, getattr(self, k).to_dict()) for k in _FAMILIES)
        return jsonable({**out, "summary": self.summary.to_dict(), "analysis": {"compositions": self.compositions},
                         "provenance": self.provenance.to_dict()})

    @classmethod
    def from_dict(cls, d: "Mapping[str, Any] | RiskReport") -> "RiskReport":
        """The report ``d`` (``report.json``, with or without its provenance) as a :class:`RiskReport`."""
        if isinstance(d, RiskReport):
            return d
        return cls(d["release"], ReportConfig(**d["config"]), EpsilonEntry.from_dict(d["epsilon"]),
                   ReroSection.from_dict(d["rero"]), PriorCurve.from_dict(d["rero_vs_prior"]),
                   TradeoffEntry.from_dict(d["tradeoff"]), tuple(RiskRow.from_dict(r) for r in d["risks"]),
                   **{k: _entry(d[k], c) for k, c in _FAMILIES.items()}, summary=Summary.from_dict(d["summary"]),
                   compositions=d["analysis"]["compositions"],
                   provenance=Provenance.from_dict(d["provenance"]) if "provenance" in d else python_provenance())

    def __getitem__(self, key: str):
        """``report["rero"]`` as when :func:`~reconrisk._src.experiments.riskreport.risk_report` returned a dict
        (deprecated: read the attributes, or ``to_dict()``)."""
        warn_at_caller("risk_report(...) returns a RiskReport: read its attributes (report.rero.pld.upper) or "
                       "report.to_dict()[...] instead of report[...]")
        return self.to_dict()[key]


def report_json(report: RiskReport, provenance: "Provenance | Mapping[str, Any] | None" = None) -> dict:
    """``report.json``: the report's :meth:`~RiskReport.to_dict`, with ``provenance`` (when given) as its own."""
    if provenance is None:
        return report.to_dict()
    return {**report.to_dict(), "provenance": jsonable(Provenance.from_dict(provenance).to_dict())}


def python_provenance() -> Provenance:
    """The provenance of a report built in Python (``risk_report(...)``): this version, no command line."""
    from . import __version__

    return Provenance("", {"source": "python"}, None, __version__)


#: Where the JSON Schema of ``report.json`` ships (package data).
SCHEMA_FILE = "report.schema.json"


def report_schema() -> dict:
    """The JSON Schema (draft 2020-12) of ``report.json``, parsed (a fresh dict on every call)."""
    return json.loads(resources.files("reconrisk._src._data").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))
