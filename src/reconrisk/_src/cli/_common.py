"""Helpers shared by the command modules: JSON or rich-table output, one progress bar, deprecated flag spellings.

* :func:`print_json`, :func:`print_table` — the two output forms of every command (JSON through :mod:`reconrisk._src._io`);
  :func:`console` — piped or redirected, output is plain and fits :data:`PIPE_WIDTH` columns (cells and text
  wrap, nothing is cut); :func:`echo` for a paragraph of text.
* :func:`progress` — the one progress bar of the CLI (description, bar, done/total, elapsed, ETA) on stderr, so
  that ``--json`` output on stdout stays clean; a no-op when disabled. :func:`spinner` for uncountable work.
* :func:`note_saved` — what a long command has saved so far; on Ctrl-C :func:`reconrisk._src.cli.main` prints it in one
  line (:func:`interrupted_message`) and exits 130.
* :func:`deprecated_alias` — an old flag spelling kept working for one release as a hidden option that prints a
  one-line deprecation note on stderr.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Sequence

import click
import numpy as np

from .._io import dumps
from ..errors import ReconRiskError


def print_json(payload: dict) -> None:
    print(dumps(payload))


#: Width of the output when it is not a terminal (a pipe, a log file): tables wrap their cells to fit, and text
#: wraps at word boundaries, so every line fits a terminal and a log viewer; nothing is cut ("…").
PIPE_WIDTH = 120


def console(stderr: bool = False):
    """A ``rich`` console for the CLI's output. On a terminal it fits the window; piped or redirected it is
    :data:`PIPE_WIDTH` wide (rich would otherwise use 80 columns, or pad to whatever width it was given)."""
    from rich.console import Console

    con = Console(stderr=stderr)
    if con.is_terminal:
        return con
    return Console(stderr=stderr, width=PIPE_WIDTH)


def echo(text: str) -> None:
    """One paragraph of plain text on stdout: as is on a terminal (which wraps it), wrapped at
    :data:`PIPE_WIDTH` when piped."""
    con = console()
    if con.is_terminal:
        print(text)
    else:
        con.print(text, markup=False, highlight=False, emoji=False)


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> None:
    from rich.table import Table

    con = console()
    # piped: no box-drawing grid, and long cells fold onto more lines instead of being cut
    plain = {} if con.is_terminal else {"box": _plain_box()}
    overflow = "ellipsis" if con.is_terminal else "fold"
    table = Table(title=title, caption=caption, **plain)
    for c in columns:
        table.add_column(c, justify="right" if c not in ("method", "quantity") else "left", overflow=overflow)
    for row in rows:
        table.add_row(*[fmt(x) for x in row])
    con.print(table)


def _plain_box():
    from rich import box

    return box.SIMPLE


def fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x == 0 or (1e-3 <= abs(x) < 1e5):
            return f"{x:.4f}"
        return f"{x:.4g}"
    return "" if x is None else str(x)


class ProgressBar:
    """What :func:`progress` yields: call it with a count to advance; :meth:`describe` relabels the bar."""

    def __init__(self, bar=None, task=None) -> None:
        self._bar, self._task = bar, task

    def __call__(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def describe(self, text: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=text)


def progress_columns() -> tuple:
    """The columns of the CLI's one progress bar: description, bar, done/total, elapsed, ETA.

    For commands that embed the bar in a ``rich.live.Live`` group (``audit``
    shows its table filling in above the bar) instead of using :func:`progress`.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn())


@contextmanager
def progress(total: int, description: str, *, enabled: bool = True, transient: bool = True) -> Iterator[ProgressBar]:
    """A progress bar with ETA on stderr for ``total`` units of work; yields a :class:`ProgressBar`.

    Disabled (``enabled=False``, e.g. under ``--json``), with nothing to do
    (``total <= 0``) or when stderr is not a terminal (a log file, a test's
    captured stream) it yields a bar whose calls do nothing.
    """
    from rich.console import Console

    console = Console(stderr=True)
    if not enabled or total <= 0 or not console.is_terminal:
        yield ProgressBar()
        return
    from rich.progress import Progress

    with Progress(*progress_columns(), console=console, transient=transient) as bar:
        yield ProgressBar(bar, bar.add_task(description, total=total))


#: What the running command has saved so far, for the one line :func:`reconrisk._src.cli.main` prints on Ctrl-C.
_SAVED: dict = {}


def note_saved(path, what: str, hint: str = "") -> None:
    """Record that ``path`` now holds ``what`` (e.g. "2 finished settings"); ``path=None``: nothing saved yet."""
    _SAVED.clear()
    _SAVED.update(path=None if path is None else str(path), what=what, hint=hint)


def forget_saved() -> None:
    _SAVED.clear()


def interrupted_message() -> str:
    """The one line printed on Ctrl-C: what was saved, and where (or that nothing was)."""
    if not _SAVED:
        return "reconrisk: interrupted; nothing was saved"
    if _SAVED.get("path") is None:
        return f"reconrisk: interrupted; nothing was saved ({_SAVED['what']})"
    hint = f"; {_SAVED['hint']}" if _SAVED.get("hint") else ""
    return f"reconrisk: interrupted; {_SAVED['what']} saved in {_SAVED['path']}{hint}"


@contextmanager
def spinner(description: str, *, enabled: bool = True) -> Iterator[None]:
    """A spinner with elapsed time on stderr for work that cannot be counted (a root search, one long solve).

    Silent when disabled (``--json``) or when stderr is not a terminal, like :func:`progress`.
    """
    from rich.console import Console

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        bar.add_task(description, total=None)
        yield


def deprecated_alias(old: str, new: str) -> Callable[[Any], Any]:
    """A typer callback for a hidden old spelling: prints ``reconrisk: note: OLD is deprecated; use NEW`` once."""

    def note(value):
        if value is not None and value is not False:
            print(f"reconrisk: note: {old} is deprecated and will be removed in the next release; use {new}",
                  file=sys.stderr)
        return value

    return note


def pick(name: str, new, old, default=None):
    """The value of a flag given under its new name or its deprecated alias (not both); ``default`` if neither."""
    if new is not None and old is not None:
        raise ReconRiskError(f"give {name} once (it and its deprecated alias were both given); found {new} and {old}")
    if new is not None:
        return new
    return old if old is not None else default


def command_options() -> frozenset[str] | None:
    """The option names of the command running now (its error messages name only these); None outside a command."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    return frozenset(o for p in ctx.command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-"))


def resolve_analysis(**source) -> tuple[Any, dict]:
    """The analysis of the release (or ``dp_accounting`` event) the flags name, and its provenance.

    :func:`~reconrisk._src.experiments.release_source.resolve_source` reads the source (numpy only);
    :func:`~reconrisk._src.analysis.dispatch.analyse` gives a release its ``PrivacyAnalysis`` and an event that is not
    DP-SGD with Gaussian noise (Laplace) its ``EventAnalysis`` (scipy loads here, once the flags are read).
    """
    from ..analysis.dispatch import analyse
    from ..experiments.release_source import resolve_source

    run, provenance = resolve_source(**source, options=command_options())
    return analyse(run), provenance


#: Monte Carlo draws per second (one draw: one step of one sample in one world), measured on one core of a
#: loaded 2-core machine: 10⁶ samples × 1000 steps took about 100 s there (55 s on a faster one).
MC_DRAWS_PER_SECOND = 2e7
#: Expected costs above this many seconds are stated before the work starts.
COST_NOTE_SECONDS = 10.0


def duration_words(seconds: float) -> str:
    """A rough duration in words: "about 20 seconds", "about a minute", "about 3 minutes", "about 2 hours"."""
    if seconds < 45:
        return f"about {max(10, int(round(seconds / 10.0)) * 10)} seconds"
    if seconds < 90:
        return "about a minute"
    if seconds < 90 * 60:
        return f"about {int(round(seconds / 60.0))} minutes"
    hours = seconds / 3600.0
    return f"about {hours:.0f} hours" if hours < 48 else f"about {hours / 24:.0f} days"


def monte_carlo_note(samples: int, steps: int, *, enabled: bool) -> str | None:
    """Say on stderr, before the draws start, what a Monte Carlo of ``samples`` × ``steps`` will cost when that is
    more than :data:`COST_NOTE_SECONDS` (never under ``--json``: ``enabled=False``). Returns the line printed."""
    seconds = 2.0 * samples * steps / MC_DRAWS_PER_SECOND
    if not enabled or seconds < COST_NOTE_SECONDS:
        return None
    line = (f"reconrisk: note: Monte Carlo: {samples:,} samples × {steps:,} steps, {duration_words(seconds)} "
            "(progress below on a terminal); --samples to change")
    print(line, file=sys.stderr)
    return line
