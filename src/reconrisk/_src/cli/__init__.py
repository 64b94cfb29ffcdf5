"""The ``reconrisk`` command line.

Each command group lives in its own module and registers itself on ``app``;
heavy imports (JAX, matplotlib) happen inside the command functions so that
``reconrisk bound`` stays fast and JAX-free. :func:`main` turns a
:class:`~reconrisk.errors.ReconRiskError` into one line on stderr and exit
code 2.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

with warnings.catch_warnings():  # typer < 0.21 imports two names click 8.5 deprecates (third party; -W error)
    warnings.filterwarnings("ignore", r"'click\.utils\.get_(text|binary)_stream' is deprecated", DeprecationWarning)
    import typer

try:  # newer typer vendors click; its exceptions live there
    from typer.core import _click as click
except ImportError:  # typer < 0.21 (e.g. where Flower pins it) uses click itself
    import click

from ..errors import ReconRiskError
from ._common import forget_saved, interrupted_message

app = typer.Typer(
    name="reconrisk",
    help="Reconstruction risk of DP-SGD: certified bounds, calibration and attacks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules register themselves on `app` when imported.
for _optional in ("bound", "audit", "analytic", "fil", "convert", "informed", "risk", "vmf", "capacity", "compare", "sweep",
                  "report", "reproduce"):
    try:
        __import__(f"{__name__}.{_optional}")
    except ModuleNotFoundError as _exc:  # module not written yet
        if _exc.name != f"{__name__}.{_optional}":
            raise


#: Modules that only the ``sim`` extra provides.
_SIM_MODULES = {"jax", "jaxlib", "optax"}


#: Path-valued flags where an empty value must not silently mean the working directory.
_PATH_FLAGS = ("--out", "-o")
_EMPTY_PATH_FORMS = ("--out=",)
#: A number as float() reads it, in any script's decimal digits (re's \d is Unicode).
_NUMERAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _one_line(text: str) -> str:
    """Collapse a message onto one line (click's messages may hold newlines); a word of over 200 characters (a
    5,000-digit number echoed back) is cut to its start and its length."""
    return " ".join(w if len(w) <= 200 else f"{w[:40]}…({len(w)} characters)" for w in str(text).split())


def _error(message: str) -> int:
    print(f"reconrisk: error: {_one_line(message)}", file=sys.stderr)
    return 2


def _given(argv: list[str], opts: list[str]) -> str | None:
    """The text the user gave for an option (``--flag VALUE`` or ``--flag=VALUE``), if found."""
    found = None
    for i, tok in enumerate(argv):
        for o in opts:
            if tok == o and i + 1 < len(argv):
                found = argv[i + 1]
            elif o.startswith("--") and tok.startswith(o + "="):
                found = tok[len(o) + 1 :]
    return found


def _usage_error(exc, argv: list[str]) -> int:
    """A click/typer usage error (bad number, unknown or missing flag) as one line, exit 2."""
    ctx = getattr(exc, "ctx", None)
    where = f"{ctx.command_path}: " if ctx is not None and ctx.command_path else ""
    message = exc.format_message()
    param = getattr(exc, "param", None)
    if param is not None and getattr(param, "opts", None):
        given = _given(argv, list(param.opts) + list(getattr(param, "secondary_opts", [])))
        if given is not None:
            message = f"{message}; found {given!r}"
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None and ctx.command_path else ""
    return _error(f"{where}{message}{hint}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``reconrisk`` script.

    Every failure the user can cause ends here as one line on stderr and exit
    code 2: :class:`~reconrisk.errors.ReconRiskError` (bad value, file or
    resource request), click/typer usage errors (non-numeric values, unknown
    or missing flags — reformatted, never the rich box), a missing ``sim``
    extra, and ``MemoryError``. Python warnings (e.g. numpy's RuntimeWarning
    on an underflow inside a log-space computation) are not printed; set
    ``RECONRISK_DEBUG=1`` to see them and full tracebacks. Anything else is a
    bug: one line naming it, exit code 1.
    """

    debug = bool(os.environ.get("RECONRISK_DEBUG"))
    args = list(sys.argv[1:] if argv is None else argv)
    for i, tok in enumerate(args):  # typer turns an empty path into "." (the working directory): refuse it
        if (tok in _PATH_FLAGS and i + 1 < len(args) and not args[i + 1].strip()) or tok in _EMPTY_PATH_FORMS:
            return _error(f"{tok.split('=')[0]} must be a folder path; found ''")
        # a number in other scripts' digits ('١٢'): float() takes it, and older typer (< 0.21) with it; refuse it
        flag, value = tok.split("=", 1) if tok.startswith("--") and "=" in tok else (args[i - 1] if i else "", tok)
        if flag.startswith("-") and not value.isascii() and _NUMERAL.fullmatch(value.strip()):
            return _error(f"{flag} must be a number written in ASCII digits; found {value!r}")

    forget_saved()
    try:
        with warnings.catch_warnings():
            if not debug:
                warnings.simplefilter("ignore")
            rv = app(args=args, standalone_mode=False, prog_name="reconrisk")
        if rv == 130:  # typer (>= 0.20) turns Ctrl-C inside a command into a returned exit code 130
            raise KeyboardInterrupt
    except ReconRiskError as exc:
        return _error(str(exc))
    except click.exceptions.NoArgsIsHelpError as exc:
        if exc.ctx is not None:
            print(exc.ctx.get_help())
        return 2
    except click.exceptions.UsageError as exc:
        return _usage_error(exc, args)
    except click.exceptions.ClickException as exc:  # e.g. FileError
        return _error(exc.format_message())
    except (typer.Abort, KeyboardInterrupt):
        print(interrupted_message(), file=sys.stderr)  # one line: what was saved where
        return 130
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or "").split(".")[0]
        if missing in _SIM_MODULES:
            return _error(
                f"this command needs the simulation extra ({missing} is not installed); "
                "install it with: pip install 'reconrisk[sim]'"
            )
        if debug:
            raise
        return _internal(exc)
    except MemoryError:
        if debug:
            raise
        return _error("out of memory: the request is larger than this machine can hold; use smaller sizes")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Exception as exc:  # a bug: say so in one line (RECONRISK_DEBUG=1 shows the traceback)
        if debug:
            raise
        return _internal(exc)
    return rv if isinstance(rv, int) else 0


def _internal(exc: BaseException) -> int:
    print(
        f"reconrisk: internal error: {type(exc).__name__}: {_one_line(exc)} "
        "(a bug; rerun with RECONRISK_DEBUG=1 for the traceback and please report it)",
        file=sys.stderr,
    )
    return 1
