"""Every mechanism and sampler has a typed home (issue 41): one registry, one traversal, PLDs without
dp_accounting's private fields, the RDP path for steps with no PLD, validation in one line.

References: dp_accounting's own public δ(ε) at the same grid (its PLDs are what reconrisk read before), exact
δ(ε) of the finite supports summed directly, GuaranteeAnalysis of the same RDP curve.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk._src.analysis.dispatch import StepsRdpAnalysis, analyse
from reconrisk._src.analysis.events import EventAnalysis
from reconrisk._src.analysis.guarantee import GuaranteeAnalysis
from reconrisk._src.accounting.rdp import DEFAULT_ORDERS
from reconrisk.errors import ReconRiskError
from reconrisk._src.mechanisms.base import Mechanism, Step, attach_simulator, registered
from reconrisk._src.mechanisms.discrete_laplace import DiscreteLaplace
from reconrisk._src.mechanisms.gaussian import Gaussian
from reconrisk._src.mechanisms.laplace import Laplace
from reconrisk._src.mechanisms.mixture_gaussians import MixtureOfGaussians
from reconrisk._src.mechanisms.randomized_response import RandomizedResponse
from reconrisk._src.mechanisms.samplers import FixedBatch, NoAmplification, Poisson, Shuffled
from reconrisk._src.mechanisms.repeat_select import RepeatAndSelect
from reconrisk._src.mechanisms.traverse import register_all, steps
from reconrisk._src.mechanisms.tree_aggregation import TreeAggregation
from reconrisk._src.mechanisms.truncated_poisson import (SampledWithReplacementGaussian, TruncatedPoisson,
                                                       TruncatedSubsampledGaussian)
from reconrisk._src.mechanisms.zcdp import ZCDP, NonPrivate
from reconrisk._src.release import Release, Segment

dpa = pytest.importorskip("dp_accounting")
SRC = Path(__file__).resolve().parents[1] / "src" / "reconrisk"

# one example per registered class that reads dp_accounting events: a new mechanism module adds its own here
EXAMPLES = {
    "gaussian": [(Gaussian(1.3), NoAmplification()), (Gaussian(1.3), Poisson(0.1)), (Gaussian(0.7), FixedBatch(10, 1000))],
    "laplace": [(Laplace(2.0), NoAmplification()), (Laplace(2.0), Poisson(0.3))],
    "discrete_laplace": [(DiscreteLaplace(0.5, 3), NoAmplification())],
    "randomized_response": [(RandomizedResponse(0.4, 5), NoAmplification())],
    "mixture_of_gaussians": [(MixtureOfGaussians(1.0, (0.0, 1.0), (0.5, 0.5)), NoAmplification())],
    "truncated_subsampled_gaussian": [(TruncatedSubsampledGaussian(1.1), TruncatedPoisson(0.05, 1000, 60))],
    "sampled_with_replacement_gaussian": [(SampledWithReplacementGaussian(1.3, 40, 1000), NoAmplification())],
    "tree_aggregation": [(TreeAggregation(1.5, (15, 7)), NoAmplification())],
    "zcdp": [(ZCDP(0.2, 0.01), NoAmplification())],
    "non_private": [(NonPrivate(), NoAmplification())],
    "repeat_and_select": [
        (RepeatAndSelect((Step(Gaussian(1.0), Poisson(0.01), 100),), 5.0, 1.0), NoAmplification()),
        (RepeatAndSelect((Step(ZCDP(0.1), NoAmplification(), 1), Step(Laplace(2.0), NoAmplification(), 3)), 4.0,
                         float("inf")), NoAmplification())],
}


# -- one registry ---------------------------------------------------------------------------------------------
def family_tables(source: str, families: set[str]) -> list[str]:
    """Module-level or class-level tables holding a registered mechanism's name: dicts (keys), sets, frozensets,
    tuples and lists (literals or dict()/set()/frozenset()/tuple()/list() calls), and ``Literal[...]`` annotations
    or aliases."""
    found = []
    tree = ast.parse(source)
    bodies = [tree.body] + [c.body for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
    for node in (n for body in bodies for n in body):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        val, elts, names = node.value, [], set()
        if isinstance(val, ast.Call) and isinstance(val.func, ast.Name) and val.func.id in (
                "dict", "set", "frozenset", "tuple", "list"):
            elts = [a for a in val.args] + [k.value for k in val.keywords]
            names = {k.arg for k in val.keywords}
        elif isinstance(val, ast.Dict):
            elts = [k for k in val.keys if k is not None]
        elif isinstance(val, (ast.Set, ast.Tuple, ast.List)):
            elts = list(val.elts)
        for ann in [getattr(node, "annotation", None), val]:  # Literal["gaussian", "vmf"] as a type or an alias
            if isinstance(ann, ast.AST):
                elts += [s.slice for s in ast.walk(ann) if isinstance(s, ast.Subscript)
                         and getattr(s.value, "id", getattr(s.value, "attr", None)) == "Literal"]
        strings = {n.value for e in elts for n in ast.walk(e) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        if (strings | names) & families:
            found.append(f"line {node.lineno}")
    return found


#: Tables that name families but are not registries, each with why (file: line count of such tables).
NOT_REGISTRIES = {
    "report/mechanisms.py": 1,  # _STYLE: a colour and marker per compared run of the figure (drawing only)
    "experiments/release_source.py": 1,  # _EVENT_TYPES: the TOML release file's spellings of events (a file format)
    "measures/conversions.py": 2,  # _BALLE: a formula per kind of guarantee ("rdp", "dp", "zcdp"), not per mechanism;
    #                                SOURCES: the kinds of guarantee `convert --from` reads
    "analysis/guarantee.py": 1,  # SOURCES: the same kinds of guarantee ("dp", "rdp", "zcdp")
    "accounting/order2.py": 1,  # OUTPUT_PERTURBATION_FORMULAS: Guo et al.'s two ε formulas ("paper", "gaussian")
    "reproduce/recipes.py": 1,  # _MODULES: the recipe modules, one per paper (reproduce/vmf.py is a paper's)
}


def test_the_mechanisms_registry_is_the_only_table_of_families():
    register_all()  # every mechanism's name, whatever ran before
    families = set(registered(Mechanism))
    assert {"gaussian", "vmf", "laplace"} <= families
    bad = []
    for path in sorted(SRC.rglob("*.py")):  # (paths under the implementation tree _src/ named from there)
        rel = str(path.relative_to(SRC / "_src" if (SRC / "_src") in path.parents else SRC))
        if rel == "mechanisms/base.py":
            continue
        found = family_tables(path.read_text(), families)
        if len(found) != NOT_REGISTRIES.get(rel, 0):
            bad += [f"{rel}: {w}" for w in found] or [f"{rel}: its listed table is gone (update NOT_REGISTRIES)"]
    assert not bad, "module-level tables of noise families outside the registry:\n" + "\n".join(bad)
    # the check can fail: the two tables this issue removed would be found
    assert family_tables('IMPLEMENTED_NOISE: set[str] = {"gaussian", "vmf"}\n', families) == ["line 1"]
    assert family_tables('_REGISTRY = {"gaussian": gaussian, "vmf": vmf}\nX = dict(gaussian=1)\n', families) == [
        "line 1", "line 2"]
    # … and the kinds it once missed: a tuple, a list, a frozenset, a class attribute, a Literal alias/annotation
    assert family_tables('M = ("gaussian", "vmf")\nN = ["laplace"]\nF = frozenset({"zcdp"})\n', families) == [
        "line 1", "line 2", "line 3"]
    assert family_tables('class C:\n    kinds = ("vmf",)\nK = Literal["gaussian", "vmf"]\n'
                         'def f():\n    x: int = 1\nk: Literal["laplace"] = "x"\n', families) == [
        "line 3", "line 6", "line 2"]


def test_every_event_class_is_read_by_one_registered_class_and_round_trips():
    register_all()  # every event reader, whatever ran before
    readers = {n for n, c in registered(Mechanism).items() if c.event_types}
    assert readers <= set(EXAMPLES), f"add an example of {sorted(readers - set(EXAMPLES))} to EXAMPLES"
    for name, cases in EXAMPLES.items():
        for m, s in cases:
            ev = m.to_dp_event(s)
            assert steps(ev) == (Step(m, s, 1),), name
            assert steps(dpa.SelfComposedDpEvent(ev, 7)) == (Step(m, s, 7),)


def test_segments_hold_typed_mechanisms_and_read_as_before():
    seg = Segment(1.5, 0.1, 10)
    assert seg.mechanism == Gaussian(1.5) and seg.noise == "gaussian" and seg.level == 1.5
    v = Segment(None, 1.0, 3, concentration=4.0)
    assert v.mechanism.concentration == 4.0 and v.noise == "vmf" and v.to_dict() == {
        "concentration": 4.0, "sample_rate": 1.0, "steps": 3}
    assert Release(concentration=4.0, steps=3).noise == "vmf" == Release(None, 1.0, 3, noise="vmf",
                                                                         concentration=4.0).noise


def test_the_simulator_is_attached_to_its_mechanism():
    pytest.importorskip("jax")
    from reconrisk._src.train import noise

    assert noise.noise_fn("gaussian") is Gaussian.simulator is noise.gaussian
    assert set(noise.noise_families()) == {"gaussian", "vmf"}
    with pytest.raises(ReconRiskError, match="noise must be one of 'gaussian', 'vmf' for the simulator; found 'laplace'"):
        noise.noise_fn("laplace")

    @dataclass(frozen=True)
    class Unregistered(Gaussian):
        name = "unregistered"

    with pytest.raises(ReconRiskError, match="registered Mechanism class"):
        attach_simulator(Unregistered, noise.gaussian)


# -- PLDs without dp_accounting's private fields ---------------------------------------------------------------
def _dpa_delta(pld, eps):
    return np.array([pld.get_delta_for_epsilon(e) for e in eps])


@pytest.mark.parametrize("b,q", [(0.8, 1.0), (2.0, 0.3)])
def test_laplace_pld_equals_dp_accountings_at_the_same_grid(b, q):
    from dp_accounting.pld import privacy_loss_distribution as P

    h, eps = 1e-3, np.array([0.0, 0.1, 0.5, 1.0])
    m, s = Laplace(b), (Poisson(q) if q < 1 else NoAmplification())
    for pess in (True, False):
        ref = P.from_laplace_mechanism(b, sampling_prob=q, value_discretization_interval=h, pessimistic_estimate=pess,
                                       use_connect_dots=pess)
        for d in ("remove", "add"):
            mine = m.pld(s, h, pessimistic=pess, direction=d).delta(eps)
            ref_d = ref.get_delta_for_epsilon(eps) if d == "remove" else None
            if d == "remove":  # the PLD object's δ is the max over both directions; the remove side is below it
                assert np.all(mine <= ref_d + 1e-12)
    both = [max(float(m.pld(s, h, pessimistic=True, direction=d).delta([e])[0]) for d in ("remove", "add"))
            for e in eps]
    ref = P.from_laplace_mechanism(b, sampling_prob=q, value_discretization_interval=h).get_delta_for_epsilon(eps)
    np.testing.assert_allclose(both, ref, rtol=1e-9, atol=1e-14)


def _exact_delta(losses, probs, eps):
    losses, probs = np.asarray(losses, float), np.asarray(probs, float)
    return np.array([float(np.sum(probs * np.maximum(0.0, -np.expm1(e - losses)))) for e in eps])


@settings(max_examples=25, deadline=None)
@given(p=st.floats(0.05, 1.0), k=st.integers(2, 12), a=st.floats(0.1, 3.0), sens=st.integers(1, 6),
       h=st.sampled_from([1e-2, 1e-3]))
def test_finite_supports_are_bracketed_by_their_two_sides(p, k, a, sens, h):
    eps = np.array([0.0, 0.05, 0.3, 1.0, 2.5])
    rr = RandomizedResponse(p, k)
    e = math.log1p(k * (1 - p) / p)
    exact = _exact_delta([e, -e, 0.0], [1 - p + p / k, p / k, (k - 2) * p / k], eps)
    up = rr.pld(NoAmplification(), h, pessimistic=True, direction="remove").delta(eps)
    lo = rr.pld(NoAmplification(), h, pessimistic=False, direction="remove").delta(eps)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)
    dl = DiscreteLaplace(a, sens)
    x = np.arange(-2000, 2000 + sens)  # the lattice summed directly; the mass left out, at most `tail`, is
    px = math.tanh(a / 2) * np.exp(-a * np.abs(x))  # an allowance on both sides
    ex = _exact_delta(a * (np.abs(x - sens) - np.abs(x)), px, eps)
    tail = 2 * math.exp(-a * 2000) / (1 - math.exp(-a))
    up = dl.pld(NoAmplification(), h, pessimistic=True, direction="remove").delta(eps)
    lo = dl.pld(NoAmplification(), h, pessimistic=False, direction="remove").delta(eps)
    assert np.all(lo <= ex + tail + 1e-12) and np.all(ex <= up + 1e-12)


@settings(max_examples=15, deadline=None)
@given(b=st.floats(0.3, 5.0), q=st.floats(0.01, 1.0), d=st.sampled_from(["remove", "add"]))
def test_laplace_pessimistic_is_above_optimistic(b, q, d):
    eps = np.array([0.0, 0.02, 0.2, 1.0])
    s = Poisson(q) if q < 1 else NoAmplification()
    up = Laplace(b).pld(s, 1e-3, pessimistic=True, direction=d).delta(eps)
    lo = Laplace(b).pld(s, 1e-3, pessimistic=False, direction=d).delta(eps)
    assert np.all(lo <= up + 1e-12)


def test_shuffled_passes_are_one_gaussian_step_and_the_release_stand_in():
    s, k = 1.2, 9
    assert Release.from_steps([Step(Gaussian(s), Shuffled(k))]) == Release.shuffled(2 * s, k)
    a = EventAnalysis(None, steps=[Step(Gaussian(s), Shuffled(k))], value_discretization=1e-3)
    b = EventAnalysis(None, steps=[Step(Gaussian(s), FixedBatch(5, 5), k)], value_discretization=1e-3)
    ea, eb = a.epsilon(1e-5, two_sided=True), b.epsilon(1e-5, two_sided=True)
    assert max(ea.lower, eb.lower) <= min(ea.upper, eb.upper)  # the same run, both brackets certified


# -- steps with no PLD: the composed RDP curve -----------------------------------------------------------------
@dataclass(frozen=True)
class RdpOnly(Mechanism):
    """A throwaway RDP-only mechanism: ρ-zCDP, ε(α) = ρα, no PLD (not registered)."""

    rho: float
    name = "rdp_only"

    def rdp(self, sampler, orders):
        return self.rho * np.asarray(orders, dtype=float)


def test_a_step_without_pld_is_analysed_through_the_composed_rdp_curve():
    a = analyse([Step(RdpOnly(0.05), NoAmplification(), 4), Step(Gaussian(2.0), Poisson(0.1), 10)])
    assert isinstance(a, StepsRdpAnalysis)
    curve = 4 * 0.05 * DEFAULT_ORDERS + 10 * Step(Gaussian(2.0), Poisson(0.1)).rdp(DEFAULT_ORDERS)
    ref = GuaranteeAnalysis("rdp", order=DEFAULT_ORDERS, epsilon=curve)
    e = a.epsilon(1e-5)
    assert e.upper == ref.epsilon(1e-5).upper and e.lower is None
    assert "RDP curve (no privacy-loss distribution for rdp_only)" in e.details["conversion"]
    r = a.rero(0.01)
    assert r.upper == ref.rero(0.01).upper and r.details["via"].startswith("RDP curve")
    # zCDP alone: the same conversion as rho-zCDP read on other orders (both sound): equal to their grids' tolerance
    z = analyse([Step(RdpOnly(0.2), NoAmplification(), 1)]).epsilon(1e-6).upper
    assert z == pytest.approx(GuaranteeAnalysis("zcdp", rho=0.2).epsilon(1e-6).upper, rel=1e-3)
    with pytest.raises(ReconRiskError, match="has no privacy-loss distribution"):
        EventAnalysis(None, steps=[Step(RdpOnly(0.1), NoAmplification())])


# -- validation: one line naming parameter, value and range ----------------------------------------------------
@pytest.mark.parametrize("make,needle", [
    (lambda: Laplace(-1.0), r"noise_multiplier must be 0 \(no noise\) or in \[1e-12, 1e\+08\]; found -1.0"),
    (lambda: Gaussian(float("nan")), "noise_multiplier"),
    (lambda: RandomizedResponse(0.5, 1), r"num_buckets must be an integer >= 2; found 1"),
    (lambda: RandomizedResponse(0.0, 3), r"noise_parameter must be in \(0, 1\]; found 0"),
    (lambda: DiscreteLaplace(0.5, 0), r"sensitivity must be an integer in \[1, 10000000\]; found 0"),
    (lambda: Poisson(1.5), r"sample_rate must be in \[0, 1\]; found 1.5"),
    (lambda: FixedBatch(5, 3), r"batch_size must be an integer in \[1, dataset_size=3\]; found 5"),
    (lambda: Shuffled(0), r"passes must be an integer in \[1, 1000000000\]; found 0"),
    (lambda: Step(Laplace(1.0), FixedBatch(1, 10)), "Laplace step under fixed batch 1/10 is not analysed"),
    (lambda: Step(Gaussian(0.0), FixedBatch(1, 10)), "no noise"),
    (lambda: MixtureOfGaussians(1.0, (0.0, 1.0), (0.5, 0.6)), "summing to 1"),
    (lambda: steps(dpa.UnsupportedDpEvent()), "UnsupportedDpEvent is not read by reconrisk"),
    (lambda: steps(dpa.PoissonSampledDpEvent(0.1, dpa.RandomizedResponseDpEvent(0.5, 2))),
     r"PoissonSampledDpEvent\(RandomizedResponseDpEvent\): randomized response under poisson"),
    (lambda: steps(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 10**30)), r"at most 1e\+09 steps"),
])
def test_refusals_are_one_line_naming_the_parameter(make, needle):
    with pytest.raises(ReconRiskError, match=needle) as e:
        make()
    assert "\n" not in str(e.value)
