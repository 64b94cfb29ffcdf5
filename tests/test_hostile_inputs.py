"""Every hostile input one line, exit 2 (issue 39, item 6); in Python a ReconRiskError.

Before: deep nesting in TOML/JSON inputs raised RecursionError, integers past Python's 4,300-digit string
limit a ValueError, ``tradeoff --out`` into an unwritable path FileNotFoundError, a
``MixtureOfGaussiansDpEvent`` with σ 0 dp_accounting's ValueError, ``load_state_dict({"history": None, ...})``
a TypeError, and an event composed 10³⁰ times was accepted, then overflowed or ran for ever. One test per class,
with its siblings (the other loaders, ``--out``/file options, degenerate events, step counts).
"""

from __future__ import annotations

import pytest

from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError

DEEP = 5000  # past Python's recursion limit (1000)
HUGE_INT = "9" * 5000  # past sys.get_int_max_str_digits() (4300)


def one_line_error(capsys, argv, needle=""):
    code = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, (argv[:4], code, err[-300:])
    assert len(lines) == 1 and lines[0].startswith("reconrisk: error: "), err[-500:]
    assert "Traceback" not in err and len(lines[0]) < 1000, lines[0][:300]
    assert needle in lines[0], (needle, lines[0][:300])
    return lines[0]


def _files(tmp_path):
    """(kind, path, argv template) for every loader of a user's TOML/JSON file, with a deep and a huge-int body."""
    deep_list = "[" * DEEP + "]" * DEEP
    out = {}
    for name, body in (("deep", deep_list), ("bigint", HUGE_INT)):
        rel = tmp_path / f"release-{name}.toml"
        rel.write_text(f"noise_multiplier = 1.0\nsample_rate = 0.01\nsteps = {body}\n")
        sweep = tmp_path / f"sweep-{name}.toml"
        sweep.write_text(f"[sweep]\nseed = {body}\n")
        opacus = tmp_path / f"opacus-{name}.json"
        opacus.write_text(f'{{"history": [[1.0, 0.01, {body}]], "mechanism": "reconrisk"}}')
        curve = tmp_path / f"curve-{name}.json"
        curve.write_text(f'{{"orders": [2, {body}], "epsilons": [1, 2]}}')
        out[name] = [
            ["bound", "--release", str(rel), "-n", "10"],
            ["risk", "--release", str(rel), "--measure", "reconstruction", "-n", "10"],
            ["sweep", "run", str(sweep), "--store", str(tmp_path / f"s-{name}.db")],
            ["report", "--from-opacus", str(opacus), "--out", str(tmp_path / f"r-{name}"), "-n", "10"],
            ["convert", "--from", "rdp", "--curve", str(curve), "-n", "10"],
        ]
    return out


def test_deep_nesting_is_one_line_in_every_loader(capsys, tmp_path):
    for argv in _files(tmp_path)["deep"]:
        one_line_error(capsys, argv, "too deeply")


def test_integers_past_the_string_limit_are_one_line_in_every_loader(capsys, tmp_path):
    for argv in _files(tmp_path)["bigint"]:
        one_line_error(capsys, argv, "too long")


def test_parse_text_refuses_in_python():
    from reconrisk._src._io import MAX_NESTING, parse_text

    for kind, text in (("json", "[" * DEEP + "]" * DEEP), ("toml", "a = " + "[" * DEEP + "]" * DEEP),
                       ("json", "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)), ("json", HUGE_INT),
                       ("toml", f"a = {HUGE_INT}"), ("json", "{"), ("toml", "a = ")):
        with pytest.raises(ReconRiskError):
            parse_text(text, kind, "input")
    assert parse_text("[" * MAX_NESTING + "]" * MAX_NESTING, "json", "input") is not None


@pytest.mark.parametrize("flag", ["-T", "-n", "--samples", "--seed"])
def test_huge_integer_flags_are_one_short_line(capsys, flag):
    argv = ["bound", "-s", "1", "-q", "0.01", "-T", "10", "-n", "10", "--json"]
    if flag in argv:
        argv[argv.index(flag) + 1] = HUGE_INT
    else:
        argv += [flag, HUGE_INT]
    one_line_error(capsys, argv)


def _bad_outs(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    return [("/proc/reconrisk-test-out", "read-only or virtual"), (str(f), "not a directory"),
            (str(f / "sub"), "runs through the file")]


def test_out_options_refuse_unwritable_paths_before_work(capsys, tmp_path):
    for out, needle in _bad_outs(tmp_path):
        one_line_error(capsys, ["tradeoff", "-s", "1", "-q", "0.01", "-T", "10", "--points", "5", "--out", out],
                       needle)


def test_file_options_refuse_unwritable_paths(capsys, tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text("[sweep]\nseed = 0\n")
    for bad, needle in ((str(f / "store.db"), "is a file, not a directory"), ("/proc/x/store.db", "read-only or virtual")):
        one_line_error(capsys, ["sweep", "export", "--store", str(tmp_path / "none.db"), "--csv", bad], needle)
    one_line_error(capsys, ["sweep", "export", "--store", str(tmp_path / "none.db"), "--csv", str(tmp_path)],
                   "must be a file path")

    from reconrisk._src._io import check_out_file

    with pytest.raises(ReconRiskError, match="--store"):
        check_out_file(f / "x.db", "--store")
    assert check_out_file(tmp_path / "new.db", "--store") == tmp_path / "new.db"


def _mixture(sd, sens, probs):
    from dp_accounting.dp_event import MixtureOfGaussiansDpEvent

    return MixtureOfGaussiansDpEvent(sd, sens, probs)


@pytest.mark.parametrize("make,needle", [
    (lambda: _mixture(0.0, [0, 1], [0.5, 0.5]), "standard_deviation"),
    (lambda: _mixture(-1.0, [0, 1], [0.5, 0.5]), "standard_deviation"),
    (lambda: _mixture(1e-300, [0, 1], [0.5, 0.5]), "sensitivities"),
    (lambda: _mixture(1.0, [0, float("inf")], [0.5, 0.5]), "sensitivities"),
    (lambda: _mixture(1.0, [], []), "non-empty"),
    (lambda: _mixture(1.0, [0, 1], [0.5, 0.6]), "summing to 1"),
    (lambda: __import__("dp_accounting").RandomizedResponseDpEvent(0.5, 1), "RandomizedResponseDpEvent"),
    (lambda: __import__("dp_accounting").RandomizedResponseDpEvent(2.0, 3), "noise_parameter"),
    (lambda: __import__("dp_accounting").PoissonSampledDpEvent(0.1, __import__("dp_accounting").LaplaceDpEvent(1e-300)),
     "PoissonSampledDpEvent"),
])
def test_degenerate_dp_accounting_events_are_refused(make, needle):
    from reconrisk._src.analysis.dispatch import analyse

    with pytest.raises(ReconRiskError, match=needle):
        analyse(make()).epsilon(1e-5)


def test_valid_events_pass_the_checks():
    """The checks refuse only the degenerate (dp_accounting's mixture PLD takes minutes, so ε is not asked here)."""
    import dp_accounting as dpa

    from reconrisk._src.mechanisms.traverse import steps

    for ev in (_mixture(1.0, [0, 1], [0.5, 0.5]), _mixture(0.3, [0, 1, 2], [0.2, 0.3, 0.5]),
               dpa.RandomizedResponseDpEvent(0.5, 4)):
        (s,) = steps(ev)
        assert s.mechanism.to_dp_event(s.sampler) == ev
    from dp_accounting.dp_event import DiscreteLaplaceDpEvent

    assert len(steps(DiscreteLaplaceDpEvent(0.5, 2))) == 1


@pytest.mark.parametrize("state,needle", [
    ({"history": None}, "mapping holding"),
    ({"history": None, "mechanism": "reconrisk_pld"}, "must be a list"),
    ({"history": "abc", "mechanism": "reconrisk_pld"}, "must be a list"),
    ({"history": [5], "mechanism": "reconrisk_pld"}, "history entries"),
    ({"history": [(1.0, 0.1, 10**30)], "mechanism": "reconrisk_pld"}, "steps must be an integer in"),
    ({"history": [(1.0, 0.1, 10**9), (2.0, 0.1, 10**9)], "mechanism": "reconrisk_pld"}, "at most 1e\\+09 steps"),
    (None, "mapping holding"),
    ([1, 2], "mapping holding"),
])
def test_load_state_dict_hostile(state, needle):
    from reconrisk.integrations.opacus import ReconRiskAccountant

    acct = ReconRiskAccountant()
    if isinstance(state, dict) and "mechanism" in state:
        state = {**state, "mechanism": acct.mechanism()}
    with pytest.raises(ReconRiskError, match=needle):
        acct.load_state_dict(state)
    assert len(acct) == 0


def test_step_counts_are_capped_everywhere(capsys, tmp_path):
    import dp_accounting as dpa

    from reconrisk._src.analysis.dispatch import analyse
    from reconrisk._src.release import Release

    for ev in (dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 10**30),
               dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0), 10**30),
               dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0), 10**8)] * 11),
               dpa.SelfComposedDpEvent(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0), 10**5), 10**5)):
        with pytest.raises(ReconRiskError, match="at most 1e\\+09 steps"):
            analyse(ev)
    with pytest.raises(ReconRiskError, match="at most 1e\\+09 steps in all"):
        Release.schedule([(1.0, 0.1, 10**9), (2.0, 0.1, 10**9)])
    rel = tmp_path / "events.toml"
    rel.write_text('[[release.events]]\ntype = "laplace"\nnoise_multiplier = 1.0\ncount = 1000000000000000000000\n')
    one_line_error(capsys, ["bound", "--release", str(rel), "-n", "10"], "count must be an integer in")
    one_line_error(capsys, ["bound", "-s", "1", "-q", "0.01", "-T", str(10**30), "-n", "10"], "steps must be")
