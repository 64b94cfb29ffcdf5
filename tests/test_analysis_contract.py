"""The one analysis contract: the three analyses share it, say where a question is undefined, and the
dispatch walks an event once."""

from __future__ import annotations

import inspect

import dp_accounting as dpa
import pytest

import reconrisk
from reconrisk import EventAnalysis, GuaranteeAnalysis, PrivacyAnalysis, Release, analyse
from reconrisk._src.analysis import dispatch
from reconrisk._src.analysis.base import QUESTIONS, Analysis, Support
from reconrisk.errors import ReconRiskError

CONTRACT = ("epsilon", "delta", "rero", "tradeoff", "risk", "gdp_mu")
CLASSES = (PrivacyAnalysis, EventAnalysis, GuaranteeAnalysis)


def _three():
    return (PrivacyAnalysis(Release(1.0, 0.01, 100)), EventAnalysis(dpa.LaplaceDpEvent(2.0)),
            GuaranteeAnalysis("dp", epsilon=1.0))


def test_every_analysis_is_an_analysis_with_the_same_signatures():
    for cls in CLASSES:
        assert issubclass(cls, Analysis)
    for name in CONTRACT:
        sigs = {cls.__name__: inspect.signature(getattr(cls, name)) for cls in CLASSES}
        assert len(set(sigs.values())) == 1, (name, sigs)
        assert sigs["PrivacyAnalysis"] == inspect.signature(getattr(Analysis, name)), name
    with pytest.raises(TypeError):  # the contract is abstract
        Analysis()


def test_the_defaults_are_the_contract_s():
    for cls in CLASSES:
        for name in ("epsilon", "delta"):
            params = inspect.signature(getattr(cls, name)).parameters
            assert params["two_sided"].default is False and params["rel_tol"].default is None


def test_supports_answers_every_question_with_one_line():
    for an in _three():
        for q in QUESTIONS:
            s = an.supports(q)
            assert isinstance(s, Support) and bool(s) == s.ok
            assert s.ok == (s.reason == "") and "\n" not in s.reason
    with pytest.raises(ReconRiskError, match="question must be one of"):
        _three()[0].supports("nonsense")


def test_what_each_analysis_supports():
    rel, ev, g = _three()
    assert all(rel.supports(q) for q in QUESTIONS if q != "rero_closed_form")
    assert not rel.supports("rero_closed_form") and PrivacyAnalysis(Release(1.0, 1.0, 10)).supports("rero_closed_form")
    for q in ("mechanism", "calibrate", "rero_mc", "rero_rdp", "rero_closed_form"):
        assert not ev.supports(q) and "LaplaceDpEvent" in ev.supports(q).reason
        assert not g.supports(q)
    assert ev.supports("two_sided") and ev.supports("distributions") and ev.supports("gdp_mu_upper")
    mix = EventAnalysis(dpa.dp_event.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5]))
    assert not mix.supports("gdp_mu_upper") and mix.supports("gdp_mu")
    for q in ("two_sided", "rero_lower", "gdp_mu", "distributions"):
        assert not g.supports(q)


@pytest.mark.parametrize("call, question", [
    (lambda g: g.epsilon(1e-5, two_sided=True), "two_sided"),
    (lambda g: g.delta(1.0, rel_tol=0.01), "two_sided"),
    (lambda g: g.rero(0.1, rel_tol=0.01), "two_sided"),
    (lambda g: g.gdp_mu(), "gdp_mu"),
    (lambda g: g.rero(0.1, method="mc"), "rero_mc"),
    (lambda g: g.tradeoff([0.1], method="pld"), "distributions"),
])
def test_a_guarantee_refuses_with_the_supports_reason(call, question):
    g = GuaranteeAnalysis("dp", epsilon=1.0)
    with pytest.raises(ReconRiskError) as err:
        call(g)
    assert str(err.value) == g.supports(question).reason


@pytest.mark.parametrize("method", ["mc", "rdp", "closed_form"])
def test_an_event_refuses_release_only_methods_with_the_supports_reason(method):
    ev = EventAnalysis(dpa.LaplaceDpEvent(2.0))
    with pytest.raises(ReconRiskError) as err:
        ev.rero(0.1, method=method)
    assert str(err.value) == ev.supports("rero_" + method).reason


def test_a_release_refuses_a_closed_form_it_has_not():
    a = PrivacyAnalysis(Release(1.0, 0.01, 100))
    with pytest.raises(ReconRiskError) as err:
        a.rero(0.1, method="closed_form")
    assert str(err.value) == a.supports("rero_closed_form").reason


def test_the_measures_read_an_analysis_not_a_release():
    from reconrisk._src.analysis.privacy_rero import rero_bounds
    from reconrisk._src.analysis.risk import risk

    with pytest.raises(ReconRiskError, match="reconrisk.analyse"):
        rero_bounds(Release(1.0, 0.01, 100), 0.1)
    with pytest.raises(ReconRiskError, match="reconrisk.analyse"):
        risk(Release(1.0, 0.01, 100), "membership_advantage")
    with pytest.raises(ReconRiskError) as err:  # a release question of an event: the supports reason
        rero_bounds(EventAnalysis(dpa.LaplaceDpEvent(2.0)), 0.1)
    assert "reads a DP-SGD release" in str(err.value)
    # the public functions dispatch at the boundary
    r = Release(1.0, 0.01, 100)
    assert reconrisk.risk(r, "membership_advantage") == PrivacyAnalysis(r).risk("membership_advantage")


def test_analyse_is_the_identity_on_an_analysis():
    for an in _three():
        assert analyse(an) is an
    a = analyse(Release(1.0, 0.01, 100))
    assert isinstance(a, PrivacyAnalysis) and analyse(a) is a


def _count_walks(monkeypatch) -> list:
    import reconrisk._src.analysis.events as events
    import reconrisk._src.mechanisms.traverse as traverse
    import reconrisk._src.release as release

    calls = []
    real = traverse.steps

    def counting(event):  # one call is one walk (the recursion into sub-events is traverse._read)
        calls.append(event)
        return real(event)

    # every module that could walk the event: the dispatch, the event analysis, the release, the traversal itself
    for mod in (dispatch, events, release):
        monkeypatch.setattr(mod, "event_steps", counting)
    monkeypatch.setattr(traverse, "steps", counting)
    return calls


@pytest.mark.parametrize("event, kind", [
    (dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 100), PrivacyAnalysis),
    (dpa.ComposedDpEvent([dpa.LaplaceDpEvent(2.0), dpa.GaussianDpEvent(3.0)]), EventAnalysis),
    (dpa.ComposedDpEvent([dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(2.0)),
                          dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.2, dpa.GaussianDpEvent(3.0)), 5)]),
     PrivacyAnalysis),
    (dpa.GaussianDpEvent(0.0), EventAnalysis),  # no noise: beyond a release's range
])
def test_analyse_walks_an_event_once(monkeypatch, event, kind):
    calls = _count_walks(monkeypatch)
    a = analyse(event)
    assert isinstance(a, kind)
    if isinstance(a, EventAnalysis):
        a.pair  # the pair view reuses the leaves
    assert len(calls) == 1
    calls.clear()
    assert isinstance(PrivacyAnalysis.from_dp_event(event), kind) and len(calls) == 1


def test_from_dp_event_and_from_guarantee_delegate_to_the_dispatch():
    ev = dpa.LaplaceDpEvent(2.0)
    assert isinstance(PrivacyAnalysis.from_dp_event(ev, value_discretization=1e-3), EventAnalysis)
    g = PrivacyAnalysis.from_guarantee("dp", epsilon=1.0)
    assert isinstance(g, GuaranteeAnalysis) and g.rero(0.6).upper == GuaranteeAnalysis("dp", epsilon=1.0).rero(0.6).upper
