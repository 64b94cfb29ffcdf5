"""``reconrisk report``: the prior is given or loudly defaulted; a saved Opacus state's clip norm is read where the
file holds one; torch's refusal of a foreign pickle reaches the user whole."""

from __future__ import annotations

import json
import pickle

import pytest

from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk._src.experiments.release_source import release_from_opacus_file

FAST = ["--samples", "0"]


def _report(capsys, tmp_path, args):
    out = tmp_path / "o"
    rc = main(["report", *args, *FAST, "--out", str(out)])
    cap = capsys.readouterr()
    return rc, cap, (json.loads((out / "report.json").read_text()) if rc == 0 else None)


def test_defaulted_prior_is_said_on_stderr_and_in_the_page(capsys, tmp_path):
    rc, cap, rep = _report(capsys, tmp_path, ["-s", "1.5", "-q", "1", "-T", "3"])
    assert rc == 0
    warn = [line for line in cap.err.splitlines() if "warning" in line]
    assert len(warn) == 1 and "no prior given" in warn[0] and "1-in-10" in warn[0]
    assert rep["provenance"]["prior"] == {"defaulted": True, "prior_size": 10, "kappa": None}
    page = (tmp_path / "o" / "report.html").read_text()
    assert "No prior was given" in page and "with a 1-in-10 prior" in page


def test_given_prior_is_not_warned(capsys, tmp_path):
    rc, cap, rep = _report(capsys, tmp_path, ["-s", "1.5", "-q", "1", "-T", "3", "--prior-size", "100"])
    assert rc == 0 and "warning" not in cap.err and rep["provenance"]["prior"]["defaulted"] is False
    assert "with a 1-in-100 prior" in (tmp_path / "o" / "report.html").read_text()


@pytest.mark.parametrize("state,flag,expect,source", [
    ({"history": [[1.1, 0.25, 8]], "max_grad_norm": 0.7}, None, 0.7, "file (max_grad_norm)"),
    ({"privacy_accountant_state_dict": {"history": [[1.1, 0.25, 8]]},
      "optimizer_state_dict": {"param_groups": [{"lr": 0.1, "max_grad_norm": 2.5}]}}, None, 2.5,
     "file (optimizer_state_dict.param_groups[0].max_grad_norm)"),
    ({"history": [[1.1, 0.25, 8]], "max_grad_norm": 0.7}, 0.7, 0.7, "file (max_grad_norm)"),
    ({"history": [[1.1, 0.25, 8]]}, 3.0, 3.0, "--clip-norm"),
    ({"history": [[1.1, 0.25, 8]]}, None, 1.0, "default 1.0 (not in the file; give --clip-norm)"),
])
def test_opacus_file_clip_norm(tmp_path, state, flag, expect, source):
    f = tmp_path / "acct.json"
    f.write_text(json.dumps(state))
    rel, prov = release_from_opacus_file(f, clip_norm=flag)
    assert rel.clip_norm == expect and prov["clip_norm_source"] == source
    assert (rel.noise_multiplier, rel.sample_rate, rel.steps) == (1.1, 0.25, 8)


def test_opacus_file_clip_norm_disagreement_is_refused(tmp_path, capsys):
    f = tmp_path / "acct.json"
    f.write_text(json.dumps({"history": [[1.1, 0.25, 8]], "max_grad_norm": 0.7}))
    with pytest.raises(ReconRiskError, match="--clip-norm 1 disagrees with the clip norm 0.7"):
        release_from_opacus_file(f, clip_norm=1.0)
    assert main(["report", "--from-opacus", str(f), "-C", "2", "--out", str(tmp_path / "o"), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "disagrees" in err


def test_torch_refusal_reaches_the_user_whole(tmp_path, capsys):
    pytest.importorskip("torch")

    class Foreign:
        def __reduce__(self):
            return (print, ("never",))

    f = tmp_path / "foreign.pt"
    f.write_bytes(pickle.dumps({"history": [(1.0, 0.1, 5)], "x": Foreign()}))
    assert main(["report", "--from-opacus", str(f), "--out", str(tmp_path / "o"), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "WeightsUnpickler error:" in err
    reason = err.split("WeightsUnpickler error:", 1)[1].strip()
    assert reason and not reason.endswith(("…", "...")) and "weights_only` set to `False` will likely succeed" not in err


def test_a_reader_asks_the_error_type_not_its_message(tmp_path):
    """Text that is not JSON is :class:`SyntaxInvalid` (an Opacus file then goes to torch's weights-only loader);
    JSON nested too deeply is refused in one line as it is, never handed to torch."""
    from reconrisk._src._io import MAX_NESTING, parse_text
    from reconrisk._src.errors import SyntaxInvalid

    with pytest.raises(SyntaxInvalid, match="is not valid JSON"):
        parse_text("{", "json", "x")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5))
    with pytest.raises(ReconRiskError, match="nests lists or tables too deeply") as caught:
        release_from_opacus_file(deep)
    assert not isinstance(caught.value, SyntaxInvalid)


def test_events_a_release_cannot_read_are_kept_as_the_event(tmp_path):
    """A file of Laplace events is the event (its own analysis) where events are welcome, refused in one line naming
    it elsewhere; a Gaussian event file is a Release either way (decided on the event's steps, not a message)."""
    from reconrisk._src.experiments.release_source import release_from_mapping
    from reconrisk._src.release import Release

    laplace = {"events": [{"type": "laplace", "noise_multiplier": 2.0, "count": 3}]}
    event = release_from_mapping(laplace, "f", events=True)
    assert repr(event) == ("ComposedDpEvent(events=[SelfComposedDpEvent(event=LaplaceDpEvent(noise_multiplier=2.0), "
                           "count=3)])")
    with pytest.raises(ReconRiskError, match="^f: a Release describes DP-SGD with Gaussian noise; this event holds"):
        release_from_mapping(laplace, "f")
    gauss = {"events": [{"type": "poisson_sampled_gaussian", "noise_multiplier": 1.0, "sampling_probability": 0.1,
                         "count": 5}]}
    for events in (True, False):
        assert release_from_mapping(gauss, "f", events=events) == Release(1.0, 0.1, 5)
