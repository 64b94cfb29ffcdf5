"""Every dp_accounting event class reconrisk once refused, alone and composed with Gaussian and Laplace steps
(``SelfComposedDpEvent`` counts 1, 7 and 300), checked from outside against ``dp_accounting`` itself at
parameters no other test names.

For each event, ``reconrisk.analyse(event).epsilon(1e-6).upper`` is at most the smallest ε ``dp_accounting``
certifies for it — its ``PLDAccountant`` (value discretisation 1e-4) and ``RdpAccountant``, under each
``NeighboringRelation`` (ADD_OR_REMOVE_ONE, REPLACE_ONE, REPLACE_SPECIAL) whose accountant ``supports`` the event
— within a stated relative tolerance: ``RDP_REL_TOL`` where the smallest is RDP-derived (reconrisk's RDP → ε
conversion is at least as tight, its PLD tighter), ``PLD_REL_TOL`` where it is PLD-derived (the two
discretisations differ by at most that). And ``.rero(KAPPA).upper`` is at most the ReRo bound that same (ε, δ)
pair certifies, min(1, κe^ε + δ) (Balle, Cherubin & Hayes 2022, Cor. 3), ε widened by the same tolerance.

Randomized response is left out: ``dp_accounting``'s ``PLDAccountant`` returns the one-step ε for
``SelfComposedDpEvent(RandomizedResponseDpEvent(...), n)``, so it is no reference there.
"""

from __future__ import annotations

import functools

import pytest

dpa = pytest.importorskip("dp_accounting")
E = dpa.dp_event
NR = dpa.NeighboringRelation

DELTA = 1e-6
KAPPA = 1e-3
#: ours ≤ theirs·(1 + tol): RDP-derived reference (equal or tighter), PLD-derived reference (discretisation).
RDP_REL_TOL = 1e-9
PLD_REL_TOL = 1e-3
COUNTS = (1, 7, 300)

TRUNCATED = E.TruncatedSubsampledGaussianDpEvent(1500, 0.04, 70, 1.3)
TREE = E.SingleEpochTreeAggregationDpEvent(30.0, [31, 9])
ZCDP = E.ZCDpEvent(0.003, 0.0005)
REPEAT = E.RepeatAndSelectDpEvent(E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(2.0)), 10),
                                  3.0, 0.5)
POISSON_GAUSSIAN = E.PoissonSampledDpEvent(0.05, E.GaussianDpEvent(1.2))
LAPLACE = E.LaplaceDpEvent(20.0)


def _sc(event, n):
    return E.SelfComposedDpEvent(event, n)


EVENTS = {
    "truncated": lambda n: _sc(TRUNCATED, n),
    "tree": lambda n: _sc(TREE, n),
    "zcdp": lambda n: _sc(ZCDP, n),
    "repeat": lambda n: _sc(REPEAT, n),
    "truncated+gaussian": lambda n: E.ComposedDpEvent([_sc(TRUNCATED, n), _sc(POISSON_GAUSSIAN, n)]),
    "truncated+laplace": lambda n: E.ComposedDpEvent([_sc(TRUNCATED, n), _sc(LAPLACE, n)]),
    "tree+laplace+gaussian": lambda n: E.ComposedDpEvent([_sc(TREE, n), _sc(LAPLACE, n), E.GaussianDpEvent(40.0)]),
    "zcdp+gaussian+laplace": lambda n: _sc(E.ComposedDpEvent([ZCDP, POISSON_GAUSSIAN, LAPLACE]), n),
    "repeat+laplace": lambda n: E.ComposedDpEvent([_sc(REPEAT, n), LAPLACE]),
}


@pytest.fixture(scope="module", autouse=True)
def _truncated_step_built_once():
    """dp_accounting's PLDAccountant builds the truncated step's PLD afresh for each event; the same call, kept for
    the module (its arguments are the event's and the relation), so the comparison fits in its time."""
    from dp_accounting.pld import pld_privacy_accountant as acc

    original = acc.PLD.from_truncated_subsampled_gaussian_mechanism
    acc.PLD.from_truncated_subsampled_gaussian_mechanism = functools.lru_cache(None)(original)
    yield
    acc.PLD.from_truncated_subsampled_gaussian_mechanism = original


def dp_accounting_epsilons(event, delta):
    """[(ε, "pld" | "rdp", relation)] for every accountant and relation of dp_accounting that supports ``event``."""
    out = []
    for rel in (NR.ADD_OR_REMOVE_ONE, NR.REPLACE_ONE, NR.REPLACE_SPECIAL):
        for kind in ("pld", "rdp"):
            acc = (dpa.pld.PLDAccountant(rel, value_discretization_interval=1e-4) if kind == "pld"
                   else dpa.rdp.RdpAccountant(neighboring_relation=rel))
            if acc.supports(event):
                acc.compose(event)
                out.append((float(acc.get_epsilon(delta)), kind, rel.name))
    return out


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("name", sorted(EVENTS))
def test_certified_epsilon_and_rero_at_most_dp_accountings(name, count):
    import reconrisk
    from reconrisk._src.measures.baselines import rero_from_dp

    event = EVENTS[name](count)
    theirs = dp_accounting_epsilons(event, DELTA)
    assert theirs, f"dp_accounting supports {name} under no relation"
    ceiling = min(eps * (1 + (PLD_REL_TOL if kind == "pld" else RDP_REL_TOL)) for eps, kind, _ in theirs)
    a = reconrisk.analyse(event)
    ours = a.epsilon(DELTA).upper
    assert 0 < ours <= ceiling, (name, count, ours, theirs)
    rero = a.rero(KAPPA).upper
    assert KAPPA <= rero <= float(rero_from_dp(KAPPA, ceiling, DELTA)[0]) * (1 + 1e-12), (name, count, rero, ceiling)


def test_the_comparison_can_fail():
    """The reference is not vacuous: a tenth of reconrisk's ε would be below it, ten times above it."""
    import reconrisk

    event = EVENTS["truncated+gaussian"](7)
    best = min(eps for eps, _, _ in dp_accounting_epsilons(event, DELTA))
    ours = reconrisk.analyse(event).epsilon(DELTA, two_sided=True)
    assert ours.lower <= best * (1 + PLD_REL_TOL) and ours.upper >= best * (1 - PLD_REL_TOL)
    assert not 10 * ours.upper <= best
