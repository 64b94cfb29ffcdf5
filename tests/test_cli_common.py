"""The CLI's shared plumbing: one progress helper and deprecated flag aliases."""

from __future__ import annotations

import pytest

from reconrisk._src.cli._common import deprecated_alias, pick, progress
from reconrisk.errors import ReconRiskError


def test_disabled_or_non_terminal_progress_is_a_silent_no_op(capsys):
    for kwargs in (dict(enabled=False), dict(enabled=True)):  # captured stderr is not a terminal
        with progress(10, "work", **kwargs) as bar:
            bar(3)
            bar.describe("more work")
            bar()
    assert capsys.readouterr() == ("", "")
    with progress(0, "nothing to do") as bar:
        bar(1)


def test_progress_on_a_terminal_shows_count_and_eta(monkeypatch):
    import io

    import rich.console

    buf = io.StringIO()
    real = rich.console.Console

    def fake_console(*args, **kwargs):
        kwargs.pop("stderr", None)
        return real(file=buf, force_terminal=True, width=120)

    monkeypatch.setattr(rich.console, "Console", fake_console)
    with progress(4, "audit ε=4", transient=False) as bar:
        bar(4)
    text = buf.getvalue()
    assert "audit ε=4" in text and "4/4" in text and "ETA" in text


def test_deprecated_alias_prints_one_note_only_when_used(capsys):
    note = deprecated_alias("--eps", "--epsilon")
    assert note(None) is None and note(False) is False
    assert capsys.readouterr().err == ""
    assert note(2.0) == 2.0
    err = capsys.readouterr().err
    assert err == "reconrisk: note: --eps is deprecated and will be removed in the next release; use --epsilon\n"


def test_pick_refuses_both_spellings():
    assert pick("--epsilon", None, None, default=1.0) == 1.0
    assert pick("--epsilon", 2.0, None) == 2.0 and pick("--epsilon", None, 3.0) == 3.0
    with pytest.raises(ReconRiskError, match="give --epsilon once"):
        pick("--epsilon", 2.0, 3.0)


def test_atomic_writes_follow_the_umask(tmp_path):
    """Result files (JSON, PNG, HTML) get 0666 & ~umask like any file open() creates, not mkstemp's 0600."""
    import os
    import stat

    from reconrisk._src import _io

    old = os.umask(0o022)
    try:
        p = _io.atomic_write(tmp_path / "a.json", "{}")
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
        os.umask(0o077)
        q = _io.write_json({"x": 1}, tmp_path, "b.json")
        assert stat.S_IMODE(q.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_piped_tables_fit_the_pipe_width_and_are_never_cut():
    """Piped output is plain (no box grid) and fits PIPE_WIDTH columns: long cells and captions wrap at word
    boundaries, nothing is cut ("membership-adva…") and no line is padded past the width."""
    import subprocess
    import sys

    from reconrisk._src.cli._common import PIPE_WIDTH

    long = "membership-advantage " * 8
    code = ("from reconrisk._src.cli._common import print_table; "
            f"print_table('t', ['quantity', 'value'], [[{long!r}, 0.5]], caption='c ' * 90)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "…" not in out and "┃" not in out
    assert out.count("membership-advantage") == 8  # each word whole (the cell wraps beside its row's 0.5000)
    assert ("c " * 90).strip() in " ".join(out.split())  # the caption wraps, whole
    assert PIPE_WIDTH <= 120 and max(len(line) for line in out.split("\n")) <= PIPE_WIDTH
    word = "y" * 200  # one word wider than the pipe: folded onto lines, not cut
    code = f"from reconrisk._src.cli._common import print_table; print_table('t', ['quantity'], [[{word!r}]])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "…" not in out and word in "".join(out.split()) and max(map(len, out.split("\n"))) <= PIPE_WIDTH


def test_piped_report_fits_a_terminal_and_a_log(tmp_path):
    """`reconrisk report … | cat`, the widest table the CLI prints (a note column of sentences): every line,
    summary sentences included, fits 120 columns, and every word of every row is there."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "reconrisk", "report", "-s", "1", "-q", "0.01", "-T", "1000", "--prior-size", "100",
            "--samples", "0"]
    out = subprocess.run([*argv, "--out", str(tmp_path / "a")], capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")
    assert max(map(len, lines)) <= 120, max(lines, key=len)
    assert "…" not in out
    rep = json.loads(subprocess.run([*argv, "--out", str(tmp_path / "b"), "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    assert len(rep["analytic"]["reason"]) > 120  # (the widest cell: a sentence, wrapped, never cut)
    assert " ".join(rep["analytic"]["reason"].split()) in " ".join(out.split())
    assert "reconstructs a training example at most 2.92% of the time (a blind guess: 1%)." in " ".join(out.split())


def test_ctrl_c_prints_one_line_naming_what_was_saved(monkeypatch, capsys, tmp_path):
    import reconrisk._src.cli as cli
    from reconrisk._src.cli._common import note_saved

    def interrupted_after_saving(**kwargs):
        note_saved(tmp_path / "results.partial.json", "2 of 5 settings finished", "results.json comes at the end")
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "app", interrupted_after_saving)
    assert cli.main(["audit"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"interrupted; 2 of 5 settings finished saved in {tmp_path / 'results.partial.json'}" in err

    def interrupted_early(**kwargs):
        return 130  # what typer returns (standalone_mode=False) when Ctrl-C hits a command

    monkeypatch.setattr(cli, "app", interrupted_early)  # and nothing left over from the previous command
    assert cli.main(["report"]) == 130
    assert capsys.readouterr().err == "reconrisk: interrupted; nothing was saved\n"
