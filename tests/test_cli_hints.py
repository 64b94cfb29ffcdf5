"""Every hint a command gives names only options that command has (issue 40, item 4).

For every command of the CLI, its options are read from the Typer/click app, and

* its ``--help`` (as printed) and the help strings behind it mention only its own ``--options``;
* its error messages mention only its own ``--options``: each command is run with no arguments and with each of
  its options alone at an out-of-range value (``-1``; a flag on its own), which reaches the checks that name
  the release's sources, missing companions and ranges. A run that gets past its checks is stopped where the
  computation starts (the first call of a function of a room below ``cli/`` other than the core and the release
  reader; imports run), so
  the sweep costs seconds, not a training run.

A message that points at an option the command lacks (``reconrisk bound`` suggesting ``--from-opacus``, which
only ``report`` has) sends the reader to ``--help`` for nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys

import click
import pytest
import typer.main

from reconrisk._src.cli import app, main

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: modules a command may enter before its computation: the CLI, the core, the readers of a release
CHECKING = ("reconrisk._src.cli", "reconrisk._src._", "reconrisk.errors", "reconrisk._src.errors", "reconrisk._src.priors",
            "reconrisk._src.release", "reconrisk._src.results", "reconrisk._src.adapters", "reconrisk._src.mechanisms",
            "reconrisk._src.report_model", "reconrisk._src.experiments.release_source")
# (not "reconrisk._": since the move under reconrisk._src that prefix is the whole implementation, so a command
# would compute under the trace instead of stopping at its first computation)


def _commands(cmd=None, path=()):
    cmd = cmd or typer.main.get_command(app)
    yield list(path), cmd
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, (*path, name))


LEAVES = [(p, c) for p, c in _commands() if not isinstance(c, click.Group)]
ALL = list(_commands())


def _options(cmd) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")} | {"--help"}


#: commands whose own checks run before anything is computed: the sweep must reach their errors
CHECKS_FIRST = {"bound", "risk", "calibrate", "report", "convert", "tradeoff", "audit", "vmf", "capacity", "analytic",
                "sweep", "reproduce"}


class _Computing(Exception):
    """Raised on the first call into a module that computes: the command's checks are behind it."""


def _importing(frame) -> bool:
    """Whether the frame runs inside an import started by the command (importing is not computing)."""
    while frame is not None and frame.f_code is not _run.__code__:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _stop_at_computation(frame, event, arg):
    name = frame.f_globals.get("__name__", "")
    if (event == "call" and name.startswith("reconrisk") and name != "reconrisk" and not name.startswith(CHECKING)
            and not _importing(frame)):
        raise _Computing(name)
    return None


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR")}
    os.environ.update(COLUMNS="200", NO_COLOR="1")
    sys.settrace(_stop_at_computation)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        sys.settrace(None)
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    return rc, out.getvalue(), err.getvalue()


def _invocations(cmd) -> list[list[str]]:
    runs = [[]]
    for p in cmd.params:
        if isinstance(p, click.Option) and not p.hidden:
            flag = next(o for o in p.opts if o.startswith("--"))
            runs.append([flag] if p.is_flag else [flag, "-1"])
    return runs


@pytest.mark.parametrize("path,cmd", ALL, ids=[" ".join(p) or "reconrisk" for p, _ in ALL])
def test_help_names_only_the_commands_options(path, cmd):
    own = _options(cmd)
    texts = [cmd.help or "", cmd.epilog or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
    if not isinstance(cmd, click.Group):  # a group's page lists its subcommands' help too
        rc, out, err = _run([*path, "--help"])
        assert rc == 0, err
        texts.append(out)
    foreign = sorted({o for t in texts for o in OPTION.findall(t)} - own)
    assert not foreign, f"reconrisk {' '.join(path)} --help names options it lacks: {foreign}"


@pytest.mark.parametrize("path,cmd", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_error_messages_name_only_the_commands_options(path, cmd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own, bad, errors = _options(cmd), [], 0
    for argv in _invocations(cmd):
        rc, _, err = _run([*path, *argv])
        if rc == 2:
            errors += 1
            foreign = sorted(set(OPTION.findall(err)) - own)
            if foreign:
                bad.append(f"reconrisk {' '.join(path + argv)}: {foreign} in {err.strip()!r}")
        else:
            assert rc in (0, 1) and (rc == 0 or "_Computing" in err), f"{' '.join(path + argv)}: exit {rc}: {err}"
    if path[0] in CHECKS_FIRST:
        assert errors, f"reconrisk {' '.join(path)}: no invocation reached an error (the sweep is broken)"
    assert not bad, "hints at options the command lacks:\n" + "\n".join(bad)


def test_the_sweep_catches_a_foreign_hint(monkeypatch):
    """The check can fail: a message naming --from-opacus from `reconrisk bound` (as before issue 40) is caught."""
    from reconrisk._src.experiments import release_source

    monkeypatch.setattr(release_source, "_ways", lambda options: "--release FILE.toml, or --from-opacus FILE")
    rc, _, err = _run(["bound"])
    (bound,) = [c for p, c in LEAVES if p == ["bound"]]
    assert rc == 2 and set(OPTION.findall(err)) - _options(bound) == {"--from-opacus"}, err
