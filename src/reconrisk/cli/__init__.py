"""The ``reconrisk`` command line.

Each command group lives in its own module and registers itself on ``app``;
heavy imports (JAX, matplotlib) happen inside the command functions so that
``reconrisk bound`` stays fast and JAX-free. :func:`main` turns a
:class:`~reconrisk.errors.ReconRiskError` into one line on stderr and exit
code 2.
"""

from __future__ import annotations

import sys

import typer

from ..errors import ReconRiskError

app = typer.Typer(
    name="reconrisk",
    help="Reconstruction risk of DP-SGD: certified bounds, calibration and attacks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules register themselves on `app` when imported.
for _optional in ("bound", "audit", "analytic", "fil", "convert", "informed", "risk", "vmf", "capacity", "compare"):
    try:
        __import__(f"{__name__}.{_optional}")
    except ModuleNotFoundError as _exc:  # module not written yet
        if _exc.name != f"{__name__}.{_optional}":
            raise


#: Modules that only the ``sim`` extra provides.
_SIM_MODULES = {"jax", "jaxlib", "optax"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``reconrisk`` script."""
    try:
        app(args=argv, standalone_mode=True)
    except ReconRiskError as exc:
        print(f"reconrisk: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or "").split(".")[0]
        if missing in _SIM_MODULES:
            print(
                f"reconrisk: error: this command needs the simulation extra ({missing} is not installed); "
                "install it with: pip install 'reconrisk[sim]'",
                file=sys.stderr,
            )
            return 2
        raise
    except SystemExit as exc:  # typer/click exit codes (usage errors are 2)
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
