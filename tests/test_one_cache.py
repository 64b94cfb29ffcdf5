"""One composition cache every door uses, and no callbacks that hide a loop (DESIGN.md, "One analysis, built once").

* ``reconrisk.epsilon`` asks the release's shared analysis (an LRU keyed by the release): asked twice, it composes
  once; the calibrator and ``reconrisk.analyse`` read the same analyses.
* The ε inversion is a function of composed distributions (``epsilon_from_pmfs``), handed no composer.
* The Opacus history adapter returns plain numbers; the release builds itself from them.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

import reconrisk as rr
from reconrisk import Release
import reconrisk._src.accounting.epsilon  # noqa: F401  (the module, not the forwarded name)
from reconrisk._src.analysis.accountant import SHARED_ANALYSES, shared_analysis
from reconrisk._src.analysis.privacy import PrivacyAnalysis

eps_module = sys.modules["reconrisk._src.accounting.epsilon"]
SRC = Path(__file__).resolve().parents[1] / "src" / "reconrisk" / "_src"


def test_epsilon_twice_composes_once_through_the_shared_analysis():
    rel = Release(1.3, 0.02, 700)  # (a release no other test of this file asks about)
    first = rr.epsilon(1.3, 0.02, 700, 1e-5)
    an = shared_analysis(rel)
    assert an.composition_count == 2  # the pessimistic remove and add distributions, once each
    assert rr.epsilon(1.3, 0.02, 700, 1e-5) == first
    assert rr.epsilon(release=rel, delta=1e-5) == first
    assert an.composition_count == 2 and set(an.compositions.values()) == {1}
    # another δ reads the same distributions; the analysis door is the same object
    rr.epsilon(1.3, 0.02, 700, 1e-7)
    assert an.composition_count == 2
    assert rr.analyse(rel) is an
    # and the number is the fresh analysis's, to the last bit
    assert first == PrivacyAnalysis(rel).epsilon(1e-5).upper


def test_fixed_batches_share_the_pair_view():
    rel = Release(0.9, 0.03, 150, sampler="fixed")
    e = rr.epsilon(release=rel, delta=1e-5)
    an = shared_analysis(rel)
    assert an.pair.composition_count == 1  # one symmetrised distribution stands for both directions
    assert rr.epsilon(release=rel, delta=1e-5) == e and an.pair.composition_count == 1
    assert e == PrivacyAnalysis(rel).epsilon(1e-5).upper


def test_the_calibrator_leaves_its_analyses_for_the_other_doors():
    sigma = rr.noise_multiplier_for_epsilon(3.0, 0.05, 40, 1e-5)
    an = shared_analysis(Release(sigma, 0.05, 40))
    before = an.composition_count
    assert before > 0  # the search composed at its answer
    assert rr.epsilon(sigma, 0.05, 40, 1e-5) <= 3.0
    assert an.composition_count == before


def test_the_shared_cache_is_bounded():
    assert shared_analysis.cache_info().maxsize == SHARED_ANALYSES == 8
    for t in range(1, SHARED_ANALYSES + 3):
        shared_analysis(Release(5.0, 0.5, t))
    assert shared_analysis.cache_info().currsize <= SHARED_ANALYSES


def test_the_epsilon_inversion_takes_distributions_not_a_composer():
    for fn in (eps_module.epsilon_from_pmfs, eps_module.optimistic_epsilon, eps_module.epsilon_without_grid):
        params = set(inspect.signature(fn).parameters)
        assert not params & {"compose", "analysis"}, fn.__name__
    assert not hasattr(eps_module, "pld_epsilon") and not hasattr(eps_module, "_pld_epsilon")
    an = PrivacyAnalysis(Release(1.0, 0.01, 300))
    pess = [an.pmf(1e-3, pessimistic=True, direction=d, loss_cap=250.0) for d in ("remove", "add")]
    up, floor = eps_module.epsilon_from_pmfs(pess, 1e-5)
    assert up == max(p.epsilon(1e-5) for p in pess) and 0 <= floor < 1e-5
    assert an.epsilon_on_grid(1e-5, 1e-3)[1] == up  # what the calibrator's first guess reads


def _params_called_back(path: Path) -> list[str]:
    """Parameters that are called (``p(...)``) or whose attribute is called as a class method (``p.schedule``)
    inside the function that takes them: a callback hiding a loop."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in node.args.args + node.args.kwonlyargs}
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in params \
                    and call.func.id in {"compose", "release_cls", "cls_", "composer"}:
                found.append(f"{path.name}:{node.name} calls {call.func.id}")
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "release_cls":
                found.append(f"{path.name}:{node.name} calls release_cls.{call.func.attr}")
    return found


@pytest.mark.parametrize("path", [SRC / "accounting" / "epsilon.py", SRC / "adapters" / "opacus_history.py"])
def test_no_composer_or_class_is_handed_down(path):
    assert not _params_called_back(path)
    assert "release_cls" not in path.read_text() and "compose=" not in path.read_text()


def test_the_opacus_adapter_returns_plain_data():
    from reconrisk._src.adapters import opacus_history as oh
    from reconrisk._src.release import opacus_history_release

    reading = oh.read_history([(1.0, 0.01, 30), (2.0, 0.01, 5)])
    assert reading == ("poisson", ((1.0, 0.01, 30), (2.0, 0.01, 5)), None, None, None)
    assert all(isinstance(x, (str, tuple, type(None))) for x in reading)
    rel, note = opacus_history_release([(1.0, 0.01, 30), (2.0, 0.01, 5)])
    assert note is None and rel == Release.schedule([(1.0, 0.01, 30), (2.0, 0.01, 5)])
    seq = oh.read_history([(1.5, 0.25, 10)], "sequential")  # no loader named: one pass per loader epoch
    assert seq.sampler == "shuffled" and seq.noise_multiplier == 1.5 and seq.passes == 3 and "SequentialSampler" in seq.note
    rel, note = opacus_history_release([(1.5, 0.25, 10)], "sequential")
    assert rel == Release.shuffled(1.5, 3, 1.0) and note == seq.note
    assert "Release" not in {n.id for n in ast.walk(ast.parse(Path(oh.__file__).read_text())) if isinstance(n, ast.Name)}


# -- each question lives with its analysis; measures are functions of curves ----------------------------------
MOVED = [  # (old module, name, new module)
    ("reconrisk._src.measures.rero", "pld_bracket", "reconrisk._src.analysis.privacy_rero"),
    ("reconrisk._src.measures.rero", "rero_bounds", "reconrisk._src.analysis.privacy_rero"),
    ("reconrisk._src.measures.rero", "start_monte_carlo", "reconrisk._src.analysis.privacy_rero"),
    ("reconrisk._src.measures.tradeoff", "tradeoff", "reconrisk._src.analysis.privacy_rero"),
    ("reconrisk._src.measures.risk", "risk", "reconrisk._src.analysis.risk"),
    ("reconrisk._src.measures.risk", "reconstruction_risk", "reconrisk._src.analysis.risk"),
    ("reconrisk._src.measures.risk", "all_risks", "reconrisk._src.analysis.risk"),
    ("reconrisk._src.measures.risk", "release_total_variation", "reconrisk._src.analysis.privacy_risk"),
    ("reconrisk._src.measures.risk", "event_prior_success", "reconrisk._src.analysis.events_risk"),
    ("reconrisk._src.measures.risk_curves", "event_pair", "reconrisk._src.analysis.events_risk"),
]


@pytest.mark.parametrize("old,name,new", MOVED)
def test_moved_names_still_read_from_their_old_module(old, name, new):
    import importlib

    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}"):
        got = getattr(importlib.import_module(old), name)
    assert got is getattr(importlib.import_module(new), name)


def test_the_old_accounting_door_forwards_with_a_warning():
    with pytest.warns(DeprecationWarning, match="moved to reconrisk._src.analysis.accountant.epsilon"):
        e = eps_module.epsilon(1.3, 0.02, 700, 1e-5)
    assert e == rr.epsilon(1.3, 0.02, 700, 1e-5)


def _measure_functions_taking_an_analysis() -> list[str]:
    """Functions of measures/ that ask an analysis: call ``.pmf(``, ``.supports(``, ``.require(``, ``.pair``,
    ``.rero(``, ``.total_variation(`` or ``.prior_success(`` on a parameter."""
    asks = {"pmf", "supports", "require", "pair", "rero", "total_variation", "prior_success", "_memoised", "risk"}
    found = []
    for path in sorted((SRC / "measures").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = {a.arg for a in node.args.args + node.args.kwonlyargs} - {"self"}  # (a curve's own PMF)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in params \
                        and sub.attr in asks:
                    found.append(f"{path.name}:{node.name} reads {sub.value.id}.{sub.attr}")
    return found


def test_measures_are_functions_of_mathematical_objects():
    assert _measure_functions_taking_an_analysis() == []


def test_the_shared_cache_refuses_what_is_not_a_release_in_one_line():
    from reconrisk.errors import ReconRiskError

    for bad in ({"noise_multiplier": 1.0}, [1.0, 0.1, 10], None):
        with pytest.raises(ReconRiskError, match="release must be a reconrisk.Release"):
            shared_analysis(bad)
    with pytest.raises(ReconRiskError, match="noise='gaussian'"):
        rr.epsilon(release=Release.vmf(5.0, 0.1, 10), delta=1e-5)  # (a VMF release: refused, not cached)


def test_rero_bound_reads_the_shared_analysis():
    rel = Release(1.7, 0.04, 90)
    b = rr.rero_bound(release=rel, kappa=0.05)
    an = shared_analysis(rel)
    n = an.composition_count
    assert n > 0 and rr.rero_bound(release=rel, kappa=0.05) == b and an.composition_count == n
    assert b == PrivacyAnalysis(rel).rero(0.05)


def test_a_dp_sgd_event_reads_the_same_shared_analysis_as_its_release():
    """A dp_accounting event that is one DP-SGD release is answered by the shared analysis of that release, so
    asking the event and the release composes once (the one cache every door uses)."""
    import dp_accounting as dpa

    release = Release(1.7, 0.03, 321)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.03, dpa.GaussianDpEvent(1.7)), 321)
    assert rr.analyse(event) is rr.analyse(release)
