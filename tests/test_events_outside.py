"""From outside (issue 41's hidden checks, played): every ``dp_accounting`` event class, nested and at parameters
no other test names, through the face ``reconrisk.analyse`` — held against ``dp_accounting``'s own accountants.

For each event with a reference, under every ``NeighboringRelation`` whose accountant ``supports`` it:
``analyse(event).epsilon(δ).upper`` ≤ the smallest ε ``dp_accounting`` certifies, δ ∈ {1e-3, 1e-6, 1e-10}, within
``PLD_REL_TOL`` (a PLD-derived reference: two discretisations) or ``RDP_REL_TOL`` (RDP-derived: reconrisk's
conversion is the optimal one); a two-sided lower end is at most that reference (the truth lies below it); ReRo at
κ ∈ {0.5, 1e-2, 1e-6} is at most what that (ε, δ) certifies, min(1, κe^ε + δ) (Balle, Cherubin & Hayes 2022);
the trade-off curve lies above the (ε, δ) curve and membership TPR at FPR 0.05 below e^ε·0.05 + δ.
``dp_accounting``'s PLD accountant ignores the count of ``SelfComposedDpEvent(RandomizedResponseDpEvent)`` (one
step's ε), so randomized response is referenced by ``RdpAccountant.compose(event, count)`` alone. Where ``dp_accounting`` accounts for nothing, one ``ReconRiskError`` line
naming the event; every hostile input, one line naming the parameter.
"""

from __future__ import annotations

import ast
import functools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

import reconrisk as rr
from reconrisk.errors import ReconRiskError

dpa = pytest.importorskip("dp_accounting")
E, NR = dpa.dp_event, dpa.NeighboringRelation

DELTAS = (1e-3, 1e-6, 1e-10)
KAPPAS = (0.5, 1e-2, 1e-6)
ALPHAS = (0.01, 0.2, 0.6)
PLD_REL_TOL, RDP_REL_TOL = 1e-3, 1e-9
G, L = E.GaussianDpEvent, E.LaplaceDpEvent


def _sc(e, n):
    return E.SelfComposedDpEvent(e, n)


def _ps(q, e):
    return E.PoissonSampledDpEvent(q, e)


#: name → (event, the dp_accounting event its reference is composed from, count of that reference)
EVENTS = {
    "composed-of-composed": E.ComposedDpEvent([E.ComposedDpEvent([G(3.3), L(4.5)]), G(3.7)]),
    "selfcomposed-of-composed": _sc(E.ComposedDpEvent([G(2.9), L(6.0)]), 3),
    "poisson-laplace": _sc(_ps(0.07, L(1.7)), 40),
    "without-replacement": _sc(E.SampledWithoutReplacementDpEvent(900, 12, G(1.1)), 15),
    "tree-list": E.SingleEpochTreeAggregationDpEvent(1.7, [5, 23, 90]),
    "truncated-B>=N": _sc(E.TruncatedSubsampledGaussianDpEvent(120, 0.08, 300, 1.2), 20),
    "truncated-B=1": _sc(E.TruncatedSubsampledGaussianDpEvent(800, 0.015, 1, 1.1), 25),
    "repeat-select-composed": E.RepeatAndSelectDpEvent(
        E.ComposedDpEvent([_sc(_ps(0.03, G(1.6)), 40), _sc(_ps(0.04, G(2.2)), 25)]), 3.5, 1.5),
    "repeat-select-shape0": E.RepeatAndSelectDpEvent(_ps(0.03, G(1.4)), 2.5, 0.0),
    "zcdp-xi": _sc(E.ZCDpEvent(0.013, 0.001), 15),
    "discrete-laplace": _sc(E.DiscreteLaplaceDpEvent(0.35, 2), 8),
    "randomized-response": _sc(E.RandomizedResponseDpEvent(0.35, 5), 6),
    "q=1": _sc(_ps(1.0, G(1.3)), 6),
    "q=0": _sc(_ps(0.0, G(0.9)), 5),
    "sigma=1e3": _sc(G(1e3), 700),
    "tree-sigma=1e-3": E.SingleEpochTreeAggregationDpEvent(1e-3, [4]),
}


def _reference_epsilon(event, delta: float) -> tuple[float, str]:
    """The smallest ε dp_accounting certifies for ``event`` at ``delta`` and which accountant gave it."""
    best = (math.inf, "")
    if isinstance(event, E.SelfComposedDpEvent) and isinstance(event.event, E.RandomizedResponseDpEvent):
        acc = dpa.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
        acc.compose(event.event, event.count)  # (not the SelfComposedDpEvent: see the module docstring)
        return float(acc.get_epsilon(delta)), "RDP"
    for rel in (NR.ADD_OR_REMOVE_ONE, NR.REPLACE_ONE, NR.REPLACE_SPECIAL):
        for kind in ("PLD", "RDP"):
            eps = _dpa(event, rel, kind, delta)
            if eps is not None and eps < best[0]:
                best = (eps, kind)
    return best


@functools.lru_cache(maxsize=None)
def _accountant(name: str, rel, kind: str):
    event = EVENTS[name]
    acc = (dpa.pld.PLDAccountant(rel, value_discretization_interval=1e-4) if kind == "PLD"
           else dpa.rdp.RdpAccountant(neighboring_relation=rel))
    if not acc.supports(event):
        return None
    try:
        acc.compose(event)
    except (MemoryError, ValueError):  # its grid cannot hold σ 1e-3 (tens of GiB): no reference there
        return None
    return acc


def _dpa(event, rel, kind, delta):
    name = next(k for k, e in EVENTS.items() if e is event)
    acc = _accountant(name, rel, kind)
    return None if acc is None else float(acc.get_epsilon(delta))


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13), solved to 1e-12."""
    f = lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta
    return optimize.brentq(f, 0.0, 200.0, xtol=1e-12)


@functools.lru_cache(maxsize=None)
def _ours(name: str):
    return rr.analyse(EVENTS[name])


@pytest.mark.parametrize("name", list(EVENTS))
def test_every_event_is_analysed_at_most_as_loosely_as_dp_accountings_best(name):
    a = _ours(name)
    # reconrisk's pessimistic PLD certifies δ only above its floor (its FFT round-off allowance, ~5e-17 per atom,
    # which dp_accounting does not count): at δ = 1e-10 that is a few % of δ, so the reference is read at δ − floor
    floor = a._floor(a.h) if hasattr(a, "_floor") else 0.0
    for delta in DELTAS:
        ref, kind = _reference_epsilon(EVENTS[name], delta)
        if kind == "PLD" and floor > 0:
            assert floor < delta, (name, delta, floor)
            ref, kind = _reference_epsilon(EVENTS[name], delta - floor)
        if name == "tree-sigma=1e-3":
            assert kind == "RDP" and a.epsilon(delta).method == "rdp_optimal"  # past the grid: its RDP curve
        assert math.isfinite(ref), f"{name}: dp_accounting accounts for it, so it must be a reference here"
        tol = PLD_REL_TOL if kind == "PLD" else RDP_REL_TOL
        ours = a.epsilon(delta)
        assert ours.upper <= ref * (1 + tol) + 1e-12, (name, delta, ours.upper, ref, kind)
        if a.supports("two_sided"):
            lo = a.epsilon(delta, two_sided=True).lower
            assert lo is None or lo <= ours.upper + 1e-12 and lo <= ref * (1 + tol) + 1e-12, (name, delta, lo, ref)
    eps6 = {d: _reference_epsilon(EVENTS[name], d)[0] * (1 + PLD_REL_TOL) for d in (1e-6, 1e-10)}
    for kappa in KAPPAS:
        got = a.rero(kappa).upper
        assert 0.0 < got <= min(1.0, min(kappa * math.exp(min(e, 700.0)) + d for d, e in eps6.items())) + 1e-12, (name, kappa)
    beta = np.asarray(a.tradeoff(list(ALPHAS)).beta.lower, dtype=float)
    e, d = eps6[1e-6], 1e-6
    floor = np.maximum.reduce([np.zeros(3), 1 - d - math.exp(min(e, 700.0)) * np.array(ALPHAS),
                               math.exp(-e) * (1 - d - np.array(ALPHAS))])
    assert np.all(beta >= floor - 1e-9) and np.all(beta <= 1 - np.array(ALPHAS) + 1e-9), (name, beta, floor)
    tpr = a.risk("membership_tpr", fpr=0.05).upper
    assert tpr <= min(1.0, math.exp(min(e, 700.0)) * 0.05 + d) + 1e-12, (name, tpr)


@pytest.mark.parametrize("name, depth", [("tree-list", 7), ("tree-sigma=1e-3", 3)])
def test_tree_aggregation_is_the_gaussian_of_its_depth_both_ends(name, depth):
    """ε of a single-epoch tree is that of a Gaussian with μ = √depth/σ (depth ⌈log₂(max steps + 1)⌉): the exact
    value lies within the two-sided bracket (upper only past the grid, where the RDP curve answers)."""
    a = _ours(name)
    sigma = EVENTS[name].noise_multiplier
    for delta in (1e-6,) if name == "tree-sigma=1e-3" else DELTAS:
        exact = _gaussian_epsilon(math.sqrt(depth) / sigma, delta) if sigma > 0.1 else None
        b = a.epsilon(delta, two_sided=True) if a.supports("two_sided") else a.epsilon(delta)
        if exact is not None:
            assert b.lower <= exact * (1 + 1e-9) and exact <= b.upper * (1 + 1e-9), (delta, b, exact)
        else:  # μ = 2000: ε ≥ μ²/2-ish; the RDP bound is at least the exact ε of the pair it bounds
            assert b.upper >= 0.5 * (math.sqrt(depth) / sigma) ** 2


NOT_ACCOUNTED = {  # dp_accounting's PLD and RDP accountants support none of these
    "UnsupportedDpEvent": E.UnsupportedDpEvent(),
    # (SampledWithReplacementDpEvent of a Gaussian is analysed: tests/test_jax_privacy_accountant.py)
    "SampledWithReplacementDpEvent(LaplaceDpEvent)": _sc(E.SampledWithReplacementDpEvent(1000, 10,
                                                                                        E.LaplaceDpEvent(1.0)), 3),
    "PoissonSampledDpEvent(PoissonSampledDpEvent)": _ps(0.5, _ps(0.2, G(1.0))),
    "PoissonSampledDpEvent(ZCDpEvent)": _ps(0.4, E.ZCDpEvent(0.1)),
    "PoissonSampledDpEvent(SingleEpochTreeAggregationDpEvent)": _ps(0.4, E.SingleEpochTreeAggregationDpEvent(2.0, 3)),
    "PoissonSampledDpEvent(RandomizedResponseDpEvent)": _ps(0.3, E.RandomizedResponseDpEvent(0.3, 4)),
}


@pytest.mark.parametrize("name", list(NOT_ACCOUNTED))
def test_what_dp_accounting_cannot_account_is_refused_in_one_line_naming_it(name):
    event = NOT_ACCOUNTED[name]
    for rel in (NR.ADD_OR_REMOVE_ONE, NR.REPLACE_ONE, NR.REPLACE_SPECIAL):
        assert not dpa.rdp.RdpAccountant(neighboring_relation=rel).supports(event)
        assert not dpa.pld.PLDAccountant(rel).supports(event)
    with pytest.raises(ReconRiskError) as exc:
        rr.analyse(event)
    assert "\n" not in str(exc.value) and str(exc.value).startswith(name.split("(")[0]), str(exc.value)


@pytest.mark.parametrize("event", [E.NonPrivateDpEvent(), E.ComposedDpEvent([G(2.0), E.NonPrivateDpEvent()]),
                                   E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.1, G(1.0)), 3)])
def test_a_non_private_step_is_analysed_as_certifying_nothing(event):
    """dp_accounting's accountants answer ε = ∞ for a composition holding NonPrivateDpEvent; so does reconrisk
    (analysed, not refused): ε = ∞ at every δ < 1, ReRo = 1, δ(ε) = 1, the trade-off curve 0."""
    has = "NonPrivate" in repr(event)
    if not has:
        event = E.ComposedDpEvent([event, E.NonPrivateDpEvent()])
    for acc in (dpa.rdp.RdpAccountant(), dpa.pld.PLDAccountant()):
        assert acc.supports(event)
        acc.compose(event)
        assert acc.get_epsilon(1e-6) == math.inf
    a = rr.analyse(event)
    assert a.epsilon(1e-6).upper == math.inf and a.rero(1e-3).upper == 1.0 and a.delta(50.0).upper == 1.0
    assert "NonPrivateDpEvent" in a.describe()["steps"]


@pytest.mark.parametrize("event", [E.NoOpDpEvent(), E.SelfComposedDpEvent(G(1.0), 0),
                                   E.ComposedDpEvent([E.NoOpDpEvent(), E.SelfComposedDpEvent(E.NonPrivateDpEvent(), 0)])])
def test_an_event_that_runs_nothing_is_perfectly_private(event):
    """No step touches the data: dp_accounting answers ε = 0; reconrisk ε = 0 and ReRo = κ (the blind guess, up to
    round-off upward). (dp_accounting refuses a SelfComposed count of 0 in its PLD accountant, and reads
    SelfComposed(NonPrivate, 0) as non-private; reconrisk reads a count of 0 as no step, as its RDP accountant does.)"""
    if isinstance(event, E.NoOpDpEvent):
        acc = dpa.pld.PLDAccountant()
        acc.compose(event)
        assert acc.get_epsilon(1e-6) == 0.0
    a = rr.analyse(event)
    assert a.epsilon(1e-6).upper == 0.0 and a.rero(0.01).upper == pytest.approx(0.01, rel=1e-12)
    assert a.rero(0.01).upper >= 0.01


def _deep(n, sc):
    e = G(30.0)
    for _ in range(n):
        e = E.SelfComposedDpEvent(e, 1) if sc else E.ComposedDpEvent([e])
    return e


HOSTILE_EVENTS = {  # (event, words the one line must hold)
    "composed nested 3000 deep": (lambda: _deep(3000, False), "nest at most"),
    "self-composed nested 3000 deep": (lambda: _deep(3000, True), "nest at most"),
    "ComposedDpEvent(None)": (lambda: E.ComposedDpEvent(None), "ComposedDpEvent.events"),
    "tree step_counts None": (lambda: E.SingleEpochTreeAggregationDpEvent(2.0, None), "step_counts"),
    "tree step_counts []": (lambda: E.SingleEpochTreeAggregationDpEvent(2.0, []), "step_counts"),
    "tree step_counts ['3']": (lambda: E.SingleEpochTreeAggregationDpEvent(2.0, ["3"]), "step_counts"),
    "mixture σ 0": (lambda: E.MixtureOfGaussiansDpEvent(0.0, [0.0, 1.0], [0.5, 0.5]), "standard_deviation"),
    "mixture σ 1e-3 (no grid)": (lambda: E.MixtureOfGaussiansDpEvent(1e-3, [0.0, 1.0], [0.5, 0.5]), "value_discretiz"),
    "count 10³⁰": (lambda: _sc(G(1.0), 10**30), "at most"),
    "count '3'": (lambda: _sc(G(1.0), "3"), "SelfComposedDpEvent.count"),
    "repeat-select mean 0": (lambda: E.RepeatAndSelectDpEvent(G(2.0), 0.0, 1.0), "mean"),
    "repeat-select shape -1": (lambda: E.RepeatAndSelectDpEvent(G(2.0), 3.0, -1.0), "shape"),
    "zCDP ρ NaN": (lambda: E.ZCDpEvent(float("nan")), "rho"),
    "truncated dataset 10¹²": (lambda: E.TruncatedSubsampledGaussianDpEvent(10**12, 1e-6, 10, 1.0), "dataset_size"),
}


@pytest.mark.parametrize("name", list(HOSTILE_EVENTS))
def test_hostile_events_are_one_line(name):
    make, needle = HOSTILE_EVENTS[name]
    with pytest.raises(ReconRiskError) as exc:
        a = rr.analyse(make())
        a.epsilon(1e-6)
    assert "\n" not in str(exc.value) and needle in str(exc.value), str(exc.value)


HOSTILE = {  # the face's nouns: (constructor, parameter the line names)
    "Gaussian(-1)": (lambda: rr.Gaussian(-1), "noise_multiplier"),
    "Gaussian(nan)": (lambda: rr.Gaussian(float("nan")), "noise_multiplier"),
    "Gaussian(True)": (lambda: rr.Gaussian(True), "noise_multiplier"),
    "Gaussian('1')": (lambda: rr.Gaussian("1"), "noise_multiplier"),
    "Gaussian(1+0j)": (lambda: rr.Gaussian(1 + 0j), "noise_multiplier"),
    "Laplace(inf)": (lambda: rr.Laplace(float("inf")), "noise_multiplier"),
    "VonMisesFisher(-2)": (lambda: rr.VonMisesFisher(-2.0), "concentration"),
    "Poisson(2)": (lambda: rr.Poisson(2), "sample_rate"),
    "Poisson(np.float64(-0.5))": (lambda: rr.Poisson(np.float64(-0.5)), "sample_rate"),
    "Poisson(False)": (lambda: rr.Poisson(False), "sample_rate"),
    "FixedBatch(10, 5)": (lambda: rr.FixedBatch(10, 5), "batch_size"),
    "FixedBatch(2.5, 10)": (lambda: rr.FixedBatch(2.5, 10), "batch_size"),
    "FixedBatch(np.nan, 10)": (lambda: rr.FixedBatch(np.nan, 10), "batch_size"),
    "Step count -1": (lambda: rr.Step(rr.Gaussian(1.0), rr.Poisson(0.1), -1), "count"),
    "Step count 10⁴⁰": (lambda: rr.Step(rr.Gaussian(1.0), rr.Poisson(0.1), 10**40), "count"),
    "Step count inf": (lambda: rr.Step(rr.Gaussian(1.0), rr.Poisson(0.1), float("inf")), "count"),
    "Step swapped": (lambda: rr.Step(rr.Poisson(0.1), rr.Gaussian(1.0), 3), "mechanism"),
    "Step sampler 0.1": (lambda: rr.Step(rr.Gaussian(1.0), 0.1, 3), "sampler"),
    "epsilon(δ NaN)": (lambda: rr.analyse([rr.Step(rr.Laplace(2.0), rr.Poisson(0.1), 3)]).epsilon(float("nan")),
                       "delta"),
    "rero(κ 1)": (lambda: rr.analyse([rr.Step(rr.Laplace(2.0), rr.Poisson(0.1), 3)]).rero(1.0), "kappa"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_inputs_to_the_face_are_one_line_naming_the_parameter(name):
    make, param = HOSTILE[name]
    with pytest.raises(ReconRiskError) as exc:
        make()
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(param) and "found" in msg, msg


#: String switches on a registered mechanism's name (``noise == "vmf"``, ``kind == "zcdp"``) left in src/, per file,
#: each with why it stays. A new one fails here: ask the mechanism object (isinstance, an attribute) instead.
STRING_SWITCHES = {
    "release.py": 11,  # Release.noise, the string a release file and the CLI spell (gaussian | vmf)
    "analysis/guarantee.py": 8,  # GuaranteeAnalysis.kind: a kind of guarantee ("zcdp", "vmf"), not a mechanism
    "measures/conversions.py": 1,  # the same kinds of guarantee
    "cli/risk.py": 1,  # --from zcdp: a kind of guarantee
    "experiments/mechanisms.py": 4,  # the Gaussian-vs-VMF comparison's config strings (its simulator parameters)
    "experiments/onerun.py": 1,  # the one-run audit simulates Gaussian releases only (Release.noise)
    "experiments/release_source.py": 1,  # the TOML release file's spelling
    "reproduce/vmf.py": 3,  # the VMF paper's figure labels (σ or κ)
    "theory/capacity.py": 1,  # capacity formula per family (Gaussian, VMF)
    "train/shadow.py": 1,  # the shadow models simulate Gaussian releases only (Release.noise)
    "train/shadow_dense.py": 1,  # the same, for the dense clip
}


def _string_switches(source: str, families: set[str]) -> int:
    return sum(1 for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Compare) and {
        c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)} & families)


def test_string_switches_on_mechanism_names_are_the_listed_ones():
    from reconrisk._src.mechanisms.base import Mechanism, registered
    from reconrisk._src.mechanisms.traverse import register_all

    register_all()
    families = set(registered(Mechanism))
    src = Path(__file__).resolve().parents[1] / "src" / "reconrisk" / "_src"
    found = {str(p.relative_to(src)): n for p in sorted(src.rglob("*.py"))
             if str(p.relative_to(src)) != "mechanisms/base.py" and (n := _string_switches(p.read_text(), families))}
    assert found == STRING_SWITCHES
    assert _string_switches('if noise == "vmf" or kind in ("laplace",):\n    pass\n', families) == 2  # it can fail


@pytest.mark.parametrize("source, words", [([], "non-empty sequence of reconrisk.Step; found an empty sequence"),
                                           ((), "non-empty sequence of reconrisk.Step; found an empty sequence"),
                                           ([rr.Step(rr.Gaussian(1.0), rr.Poisson(0.1), 3), 3],
                                            "steps must be reconrisk.Step objects .*; found int")])
def test_a_sequence_that_is_not_steps_is_refused_in_one_line_naming_what_was_found(source, words):
    with pytest.raises(ReconRiskError, match=words) as exc:
        rr.analyse(source)
    assert "\n" not in str(exc.value) and "_src" not in str(exc.value)
