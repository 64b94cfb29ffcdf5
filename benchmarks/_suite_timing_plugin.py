"""pytest plugin for benchmarks/suite_timing.py: per-test wall time and JAX compile time.

Loaded with ``-p _suite_timing_plugin`` (benchmarks/ on PYTHONPATH) by suite_timing.py; inert otherwise.
Each process (the xdist controller and every worker) appends one JSON line per test (setup, call and teardown together) to
``$SUITE_TIMING_DIR/<pid>.jsonl``: node id, wall seconds, CPU seconds of the process and of the
subprocesses the test waited for, and the JAX compile events seen meanwhile
(``/jax/core/compile/*`` durations via ``jax.monitoring``: tracing, lowering, backend compile; and
persistent-cache hits).
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

_DIR = os.environ.get("SUITE_TIMING_DIR")
_acc: dict[str, float] = {}


def _listener(event: str, duration: float, **_kw) -> None:
    if event.startswith("/jax/core/compile/") or event.startswith("/jax/compilation_cache/"):
        _acc[event] = _acc.get(event, 0.0) + duration
        key = event + "#n"
        _acc[key] = _acc.get(key, 0.0) + 1


def _count_listener(event: str, **_kw) -> None:
    if event.startswith("/jax/compilation_cache/"):
        key = event + "#n"
        _acc[key] = _acc.get(key, 0.0) + 1


if _DIR:
    import jax.monitoring as _mon

    _mon.register_event_duration_secs_listener(_listener)
    _mon.register_event_listener(_count_listener)


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children (the CLI subprocesses a test runs and waits for)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _DIR:
        yield
        return
    _acc.clear()
    t0 = time.perf_counter()
    c0 = time.process_time()
    k0 = _children_cpu()
    yield
    rec = {
        "nodeid": item.nodeid,
        "wall": time.perf_counter() - t0,
        "cpu": time.process_time() - c0,
        "child_cpu": _children_cpu() - k0,
        "jax": dict(_acc),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "end": time.time(),
    }
    with open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a") as fh:
        fh.write(json.dumps(rec) + "\n")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Cost of one full garbage collection at session end (after tests/conftest.py's freeze, if any).

    After the session, pytest's cleanup collects garbage several times; an xdist worker still busy 5 s after
    the controller's shutdown is sent SIGINT by execnet (a stray KeyboardInterrupt traceback)."""
    if not _DIR:
        return
    import gc

    t = time.perf_counter()
    gc.collect()
    rec = {"gc_collect_s": time.perf_counter() - t, "tracked_objects": len(gc.get_objects()),
           "frozen_objects": gc.get_freeze_count(), "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    with open(os.path.join(_DIR, f"{os.getpid()}.shutdown"), "a") as fh:
        fh.write(json.dumps(rec) + "\n")
