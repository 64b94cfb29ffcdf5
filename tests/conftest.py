"""Suite-wide settings: reproducible hypothesis, one JAX compilation cache per run, heavy files scheduled first.

Hypothesis profiles (``HYPOTHESIS_PROFILE`` picks one; unset, ``ci`` is used, CI=true or not):

* ``ci``: derandomised (the examples are a function of the test alone, so every CI run, and every run on your
  machine, tries the same inputs and takes the same time), no example database, ``print_blob`` so a failure
  prints the ``@reproduce_failure`` line, no deadline (XLA compilation and a shared CPU make timings noise);
* ``random``: the same budgets with fresh random examples and the local example database, to hunt for new
  counterexamples: ``HYPOTHESIS_PROFILE=random python3.11 -m pytest -q -n 2 --dist loadfile``.

JAX: the first compilation of a program in this run is written to a persistent compilation cache in a
per-run temporary directory that the xdist workers and the CLI subprocesses the tests start all share
(environment variables, set by the controller before the workers start). A program compiled by two workers,
by a test and the CLI process it launches, or by two tests that build the same closure twice, is compiled
once. The directory starts empty (nothing carries over between runs, so no test can pass on a stale
executable) and is removed at the end. ``RECONRISK_TEST_JAX_CACHE=off`` disables it.

XLA's optimisation level (``RECONRISK_TEST_XLA``): over half of the suite's time was XLA compiling programs that
then run for milliseconds. By default (``fast``) the tests compile with JAX's ``jax_disable_most_optimizations``
(LLVM at -O0: the same optimised HLO, compared for the digits CNN's DP-SGD step, so the same operations in the
same order, rounded as unvectorised machine code rounds them), set in the environment so the xdist workers and
every CLI subprocess a test starts compile the same way. This cuts a compile-heavy file's CPU time by about a
third. What it cannot check is a claim about the exact bits users get from the production build (-O2, which
vectorises and may round a transcendental function differently): tests that assert two different compiled
programs give identical floats carry ``@pytest.mark.production_xla`` and run at the production level, their
subprocesses too (the fixture below clears JAX's in-memory caches on entering one, so no fast-level executable
serves it). Such a test computes both sides of its comparison itself, or takes them from module fixtures built
inside ``with production_xla():`` (the fixture of that name): a module fixture is built before the test's own
switch, so it would otherwise be a fast-level build. ``RECONRISK_TEST_XLA=production`` runs the whole suite at
the production level (about a third more CPU time: 909 against 670 s), for a release or when a failure might
depend on the level.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import pathlib
import shutil
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_COMMON)
settings.register_profile("random", print_blob=True, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_CACHE_ENV = "RECONRISK_TEST_JAX_CACHE"


def _configure_jax_cache() -> str | None:
    """Create (controller) or join (xdist worker) the run's compilation cache; export it to subprocesses."""
    if os.environ.get(_CACHE_ENV) == "off":
        return None
    owned = None
    path = os.environ.get(_CACHE_ENV)
    if not path:  # the controller, or a run without xdist: this process owns the directory
        path = owned = tempfile.mkdtemp(prefix="reconrisk-jax-cache-")
        os.environ[_CACHE_ENV] = path
    # JAX reads these at import; set them before any test module imports it, and for every child process
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    if "jax" in sys.modules:  # imported already (by a plugin): the variables above came too late for it
        import jax

        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return owned


_OWNED_CACHE = _configure_jax_cache()

_XLA_ENV = "RECONRISK_TEST_XLA"
_XLA_LEVEL = os.environ.get(_XLA_ENV, "fast")
if _XLA_LEVEL not in ("fast", "production"):
    raise pytest.UsageError(f"{_XLA_ENV}={_XLA_LEVEL!r}: must be 'fast' (the default) or 'production'")
_FAST_ENV = "JAX_DISABLE_MOST_OPTIMIZATIONS"
if _XLA_LEVEL == "fast":
    os.environ[_FAST_ENV] = "1"  # read by JAX at import: the workers' and every subprocess's
    if "jax" in sys.modules:  # imported already (by a plugin)
        import jax

        jax.config.update("jax_disable_most_optimizations", True)
else:
    os.environ.pop(_FAST_ENV, None)



@contextlib.contextmanager
def _production_level():
    """JAX compiles at its default (production) level inside; nested or at a production-level run: nothing.

    The variable is the level's one record in this process: set at the fast level, absent at the production one.
    """
    if os.environ.get(_FAST_ENV) != "1":
        yield
        return
    import jax

    jax.config.update("jax_disable_most_optimizations", False)
    jax.clear_caches()  # the in-memory caches do not key on the level: drop the fast-level executables
    del os.environ[_FAST_ENV]  # the subprocesses started inside compile at the production level too
    try:
        yield
    finally:
        os.environ[_FAST_ENV] = "1"
        # executables compiled at the production level may serve later tests: they are correct at any level
        jax.config.update("jax_disable_most_optimizations", True)


@pytest.fixture(scope="session")
def production_xla():
    """``with production_xla(): ...`` in a module fixture whose results a ``production_xla`` test compares."""
    return _production_level


@pytest.fixture(autouse=True)
def _xla_level(request):
    """A ``production_xla`` test's programs (and its subprocesses') compile at JAX's default level."""
    if request.node.get_closest_marker("production_xla") is None:
        yield
        return
    with _production_level():
        yield


def pytest_sessionfinish(session, exitstatus):
    """In an xdist worker, collect the last tests' garbage now, then freeze what survives.

    After the session a worker still runs pytest's cleanups, which collect garbage several times over the whole
    heap (JAX, torch: GBs). On a busy 2-core machine that took over 5 s, and execnet then SIGINTs a worker that
    has not exited 5 s after the controller's shutdown: the KeyboardInterrupt landed in hypothesis's gc callback
    and ended the run with a PytestUnraisableExceptionWarning traceback. Collected here, before the worker
    reports back, anything unraisable is still reported against the session; frozen, the survivors (alive
    until exit anyway) are skipped by the later collections, so the worker exits promptly.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        gc.collect()
        gc.freeze()


def pytest_unconfigure(config):
    if _OWNED_CACHE:
        shutil.rmtree(_OWNED_CACHE, ignore_errors=True)


# -- scheduling: heaviest files first --------------------------------------------------------------------------
# ``--dist loadfile`` hands whole files to the two workers in collection order, each worker holding two
# pending. Left alone, xdist sorts files by *number of tests*, which puts the many-test, cheap files (layout,
# theory) first and the few-test, compile-heavy ones (attacks, FIL trainer, audit CLI) last, so one worker
# runs the long tail alone. Here the files are ordered by their measured CPU seconds (tests/file_costs.json,
# written by ``python3.11 benchmarks/suite_timing.py --write-costs``), largest first: longest-processing-time
# list scheduling, within a few percent of the best split. A file missing from the table (new) counts as
# _DEFAULT_COST; a stale table only costs balance, never a test.
_COSTS_FILE = pathlib.Path(__file__).with_name("file_costs.json")
_DEFAULT_COST = 5.0


def pytest_configure(config):
    # keep our order: xdist's own reordering (by test count) would undo it, unless asked for explicitly
    if hasattr(config.option, "loadscopereorder") and "--loadscope-reorder" not in config.invocation_params.args:
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
    try:
        costs = json.loads(_COSTS_FILE.read_text())
    except (OSError, ValueError):
        return
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], i)

    def key(pair):
        i, item = pair
        f = item.nodeid.split("::")[0]
        return (-costs.get(pathlib.PurePath(f).name, _DEFAULT_COST), first[f], i)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


# -- every report.json a test writes is checked against the shipped JSON Schema ---------------------------
def check_report_json(payload: dict) -> None:
    """Validate ``payload`` (a ``report.json``) against ``reconrisk/_data/report.schema.json`` (raises on a mismatch,
    naming the path into the document and what was expected)."""
    import jsonschema

    from reconrisk._src.report_model import report_schema

    validator = jsonschema.Draft202012Validator(report_schema())
    errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise AssertionError(f"report.json does not match its schema at {'/'.join(map(str, e.absolute_path)) or '/'}: "
                             f"{e.message[:500]} ({len(errors)} error(s))")


#: How many report.json files the schema check has seen in this process (a test of the hook reads it).
REPORTS_CHECKED = []


@pytest.fixture(scope="session", autouse=True)
def _report_json_schema():
    """Install :func:`check_report_json` in the report writer (``reconrisk._src.report.html.JSON_CHECKS``) for the whole
    run: ``reconrisk report`` in-process (the CLI tests, the docs pages) and ``write_report`` called directly."""
    from reconrisk._src.report import html

    def check(payload):
        check_report_json(payload)
        REPORTS_CHECKED.append(payload.get("provenance", {}).get("command"))

    html.JSON_CHECKS.append(check)
    yield
    html.JSON_CHECKS.remove(check)
