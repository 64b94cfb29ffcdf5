"""Long commands say their expected cost up front (issue 40, item 7).

Before: ``reconrisk bound --method all`` ran 10⁶ Monte Carlo samples (55 s against 0.8 s for the default
method) with nothing said before it started. Now a one-line note on stderr names the samples, the steps, a rough
duration and the flag that changes it; the bar (rich) follows on a terminal; ``--json`` stays clean. The Monte
Carlo itself is replaced by a stub here (the note is printed before it starts), so the tests take seconds.
"""

from __future__ import annotations

import json

import pytest

from reconrisk._src.cli import _common, main
from reconrisk._src.results import Bound


@pytest.fixture
def no_draws(monkeypatch):
    """A stand-in for the Monte Carlo of ``bound`` (same signature, no draws) and of ``report``."""
    import reconrisk._src.cli.bound as bound_cli

    def fake(analysis, k, samples, seed, confidence, *, quiet):
        return Bound("reconstruction", 0.0, 1.0, estimate=0.5, method="mc", formula="stub")

    monkeypatch.setattr(bound_cli, "_run_mc", fake)


ARGS = ["bound", "-s", "1", "-q", "0.01", "-T", "1000", "-n", "100", "--method", "all"]


def test_bound_all_states_the_monte_carlo_cost_up_front(capsys, no_draws):
    assert main(ARGS) == 0
    err = capsys.readouterr().err
    notes = [ln for ln in err.splitlines() if "Monte Carlo:" in ln]
    assert len(notes) == 1, err
    assert "1,000,000 samples × 1,000 steps" in notes[0] and "--samples to change" in notes[0]
    assert "minute" in notes[0]


def test_bound_all_json_stays_clean(capsys, no_draws):
    assert main([*ARGS, "--json"]) == 0
    cap = capsys.readouterr()
    json.loads(cap.out)  # the whole of stdout is the JSON document
    assert "Monte Carlo:" not in cap.err and "Monte Carlo:" not in cap.out


def test_small_monte_carlo_says_nothing(capsys, no_draws):
    assert main(["bound", "-s", "1", "-q", "0.01", "-T", "10", "-n", "100", "--method", "mc", "--samples", "1000"]) == 0
    assert "Monte Carlo:" not in capsys.readouterr().err


def test_default_method_says_nothing(capsys):
    assert main(["bound", "-s", "1", "-q", "0.01", "-T", "1000", "-n", "100"]) == 0
    assert "Monte Carlo:" not in capsys.readouterr().err


@pytest.mark.parametrize("seconds,words", [(3, "about 10 seconds"), (24, "about 20 seconds"), (60, "about a minute"),
                                           (100, "about 2 minutes"), (7200, "about 2 hours"),
                                           (5 * 86400, "about 5 days")])
def test_duration_words(seconds, words):
    assert _common.duration_words(seconds) == words


def test_note_scales_with_the_work(capsys):
    assert _common.monte_carlo_note(10**6, 1000, enabled=True) is not None
    assert _common.monte_carlo_note(10**6, 1000, enabled=False) is None  # --json
    assert _common.monte_carlo_note(1000, 10, enabled=True) is None  # well under COST_NOTE_SECONDS
    capsys.readouterr()


def test_report_states_the_cost_and_json_stays_clean(capsys, tmp_path, monkeypatch):
    """``report`` runs the same Monte Carlo by default; its note is printed before the report is computed."""
    import reconrisk._src.experiments.riskreport as rr

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop

    monkeypatch.setattr(rr, "risk_report", stop)
    import reconrisk._src.cli.report as report_cli

    monkeypatch.setattr(report_cli, "_early_draws", lambda *a, **k: None)
    base = ["report", "-s", "1", "-q", "0.01", "-T", "1000", "-n", "100", "--out", str(tmp_path)]
    assert main(base) == 1  # the stub stops it after the note (an "internal error" line)
    err = capsys.readouterr().err
    assert "Monte Carlo: 1,000,000 samples × 1,000 steps" in err
    assert main([*base, "--json"]) == 1
    assert "Monte Carlo:" not in capsys.readouterr().err
