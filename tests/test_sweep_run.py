"""Sweeps end to end (issue 14 acceptance): 800 audit trials in-process, on a 2-worker local Dask cluster and on a
process pool give identical tables; a runner killed with SIGKILL midway resumes with no lost or duplicated trial
and the same numbers.

The trial is tiny (4 DP-SGD steps on |D₋| = 100 digits, a prior of 4, ~2 ms per trial once compiled). The
uninterrupted reference runs first, in a subprocess, and fills a JAX compilation cache that every later
process (pool and Dask workers, the killed runner) loads instead of compiling again; this test process itself
never compiles the trial function.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reconrisk
from reconrisk._src.cli import main
from reconrisk._src.experiments.store import ResultStore
from reconrisk._src.experiments.sweep import load_sweep, run_sweep

pytest.importorskip("jax")
pytestmark = pytest.mark.slow  # ~35 s on an idle 2-core machine: one compilation, six short-lived processes

SWEEP = """
[sweep]
name = "acceptance"
seed = 3
trials = 400
chunk = 8

[grid]
noise_multiplier = [1.0, 3.0]
steps = 4
prior_size = 4
known_size = 100
"""
TOTAL = 800
SRC = str(Path(reconrisk.__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}


def _cli(*args) -> list:
    return [sys.executable, "-m", "reconrisk", "sweep", *map(str, args)]


@pytest.fixture(scope="module")
def sweep_env(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    (d / "s.toml").write_text(SWEEP)
    cache = d / "jax-cache"
    ref = d / "ref.db"
    proc = subprocess.run(_cli("run", d / "s.toml", "--store", ref, "--pool", "0", "--compile-cache", cache, "--json"),
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["written"] == TOTAL and summary["skipped"] == 0
    with ResultStore.open(ref) as s:
        table = s.table(run_columns=False)
    return {"dir": d, "toml": d / "s.toml", "cache": str(cache), "ref": ref, "table": table}


def _table(path):
    with ResultStore.open(path) as s:
        assert s.integrity_check() == "ok"
        return s.table(run_columns=False)


def test_reference_run_is_complete_and_a_rerun_writes_nothing(sweep_env):
    cols, rows = sweep_env["table"]
    assert len(rows) == TOTAL
    assert len({(r[1], r[2]) for r in rows}) == TOTAL  # (point, replicate) unique
    i = cols.index("success_alg2")
    rate = {s: sum(r[i] for r in rows if r[cols.index("noise_multiplier")] == s) / 400 for s in (1.0, 3.0)}
    upper = {r[cols.index("noise_multiplier")]: r[cols.index("rero_upper")] for r in rows}
    assert rate[1.0] > rate[3.0] > 0.25  # more noise, less success; above the blind guess κ = 1/4
    for s in (1.0, 3.0):  # the certified bound holds (margin: ~2.5 binomial standard deviations)
        assert rate[s] <= upper[s] + 2.5 * (upper[s] * (1 - upper[s]) / 400) ** 0.5
    # issue 27: each point's summary carries what its successes refute, beside its certificate
    from reconrisk._src.experiments.sweep import summarize

    with ResultStore.open(sweep_env["ref"]) as s:
        points = summarize(s)
    for e in points:
        emp, rate = e["empirical"]["alg2"], e["attacks"]["alg2"]
        assert emp["rero"]["successes"] == rate["successes"] and 0 < emp["rero"]["lower"] < rate["rate"]
        assert emp["rero"]["kappa"] == 0.25 and emp["epsilon"]["delta"] == e["config"]["delta"]
        assert emp["consistent"] and emp["certified_rero_upper"] == e["certificate"]["rero_upper"]
    again = run_sweep(load_sweep(sweep_env["toml"]), sweep_env["ref"], pool=0)
    assert (again.written, again.skipped, again.ran) == (0, TOTAL, 0)


def test_local_dask_cluster_of_two_workers_gives_the_same_table(sweep_env):
    pytest.importorskip("dask.distributed")
    store = sweep_env["dir"] / "dask.db"
    res = run_sweep(load_sweep(sweep_env["toml"]), store, workers=2, compile_cache=sweep_env["cache"])
    assert res.written == TOTAL and res.backend == "local Dask cluster (2 workers)"
    assert _table(store) == sweep_env["table"]
    with ResultStore.open(store) as s:
        assert 1 <= len({t["worker"] for t in s.trials()}) <= 2


def test_process_pool_gives_the_same_table(sweep_env):
    store = sweep_env["dir"] / "pool.db"
    res = run_sweep(load_sweep(sweep_env["toml"]), store, pool=2, compile_cache=sweep_env["cache"])
    assert res.written == TOTAL
    assert _table(store) == sweep_env["table"]


def _count(path) -> int:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0  # not created yet


def test_sigkill_midway_then_rerun_completes_with_same_numbers(sweep_env, capsys):
    d = sweep_env["dir"]
    store = d / "killed.db"
    proc = subprocess.Popen(_cli("run", sweep_env["toml"], "--store", store, "--pool", "0", "--compile-cache",
                                 sweep_env["cache"], "--json"),
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 300
    n = 0
    while time.monotonic() < deadline and proc.poll() is None:
        n = _count(store) if store.exists() else 0
        if n >= 80:  # ten chunks stored: kill the runner mid-sweep
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(60)
    assert proc.returncode == -signal.SIGKILL, f"runner was not killed midway (rc {proc.returncode}, {n} rows)"
    left = _count(store)
    assert 80 <= left < TOTAL
    res = run_sweep(load_sweep(sweep_env["toml"]), store, pool=1, compile_cache=sweep_env["cache"])
    assert res.skipped == left and res.written == TOTAL - left
    assert _table(store) == sweep_env["table"]
    # the exported tables are the same files
    for name, path in (("ref", sweep_env["ref"]), ("killed", store)):
        assert main(["sweep", "export", "--store", str(path), "--csv", str(d / f"{name}.csv"), "--no-run-columns"]) == 0
    assert (d / "ref.csv").read_bytes() == (d / "killed.csv").read_bytes()
    assert len((d / "ref.csv").read_text().splitlines()) == TOTAL + 1
    capsys.readouterr()
    assert main(["sweep", "status", "--store", str(store), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["trials"] == TOTAL and [p["trials"] for p in status["points"]] == [400, 400]
