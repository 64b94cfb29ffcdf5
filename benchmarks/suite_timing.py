"""Where the test suite's time goes: compilation vs execution, per file, per worker, slowest tests.

Runs the README's test command (or any pytest arguments you give after ``--``) with the
``_suite_timing_plugin`` loaded in every process, then prints:

* wall time of the whole run, CPU seconds of pytest and all its workers (so: cores used on average),
  the largest resident set of any one process;
* the sum of per-test wall time, and within it JAX's compile phases (tracing, lowering to MLIR, XLA
  backend compile; counted by ``jax.monitoring`` listeners) and persistent-cache hits;
* per xdist worker: busy seconds and when it finished (how long the other core idled at the end);
* per file and per test (the slowest), wall and compile seconds.

Usage (from the repository root)::

    python3.11 benchmarks/suite_timing.py                       # the README's command, whole suite
    python3.11 benchmarks/suite_timing.py -- tests/test_rero.py -n 0
    python3.11 benchmarks/suite_timing.py --report DIR          # re-print a run's records
    python3.11 benchmarks/suite_timing.py --compare OLD NEW     # two runs' files side by side
    python3.11 benchmarks/suite_timing.py --write-costs         # also refresh tests/file_costs.json

Records go to ``--out`` (default: a new temporary directory, printed), one JSON line per test, so a
run can be summarised again or compared later. Other processes on the machine change the figures;
the script prints the load average before and after.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import resource
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["-q", "-n", "2", "--dist", "loadfile"]  # overwritten below from .ci/run when it parses
COMPILE_EVENTS = {
    "trace": "/jax/core/compile/jaxpr_trace_duration",
    "lower": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "xla": "/jax/core/compile/backend_compile_duration",
}
CACHE_HITS = "/jax/compilation_cache/cache_hits#n"


def ci_args() -> list[str]:
    """The pytest arguments of .ci/run's last pytest line (the README's test command)."""
    try:
        lines = (ROOT / ".ci" / "run").read_text().splitlines()
    except OSError:
        return DEFAULT_ARGS
    for line in reversed(lines):
        words = shlex.split(line, comments=True)
        if words[:3] == ["python3.11", "-m", "pytest"]:
            return words[3:]
    return DEFAULT_ARGS


def load(out: pathlib.Path) -> list[dict]:
    recs = []
    for f in sorted(out.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                recs.append(json.loads(line))
    return recs


def cpu_s(rec: dict) -> float:
    """CPU seconds of a test: its process plus the subprocesses it waited for (older records: process only)."""
    return rec.get("cpu", 0.0) + rec.get("child_cpu", 0.0)


def compile_s(rec: dict) -> float:
    return sum(rec["jax"].get(e, 0.0) for e in COMPILE_EVENTS.values())


def n_compiles(rec: dict) -> int:
    return int(rec["jax"].get(COMPILE_EVENTS["xla"] + "#n", 0))


def per_file(recs: list[dict]) -> dict[str, dict]:
    files: dict[str, dict] = collections.defaultdict(lambda: collections.Counter())
    for r in recs:
        f = files[r["nodeid"].split("::")[0]]
        f["tests"] += 1
        f["wall"] += r["wall"]
        f["cpu"] += cpu_s(r)
        f["compile"] += compile_s(r)
        f["compiles"] += n_compiles(r)
        f["hits"] += int(r["jax"].get(CACHE_HITS, 0))
    return files


def lpt_makespan(costs: list[float], workers: int) -> float:
    """Makespan of longest-processing-time-first list scheduling of ``costs`` on ``workers`` machines."""
    loads = [0.0] * workers
    for c in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += c
    return max(loads)


def report(out: pathlib.Path, top: int = 25, meta: dict | None = None) -> None:
    recs = load(out)
    if meta is None and (out / "meta.json").exists():
        meta = json.loads((out / "meta.json").read_text())
    if not recs:
        print(f"no records in {out}")
        return
    print(f"records: {out}  ({len(recs)} tests)")
    if meta:
        wall = meta["wall_s"]
        print(f"command: {meta['command']}" + (f"   XLA level (RECONRISK_TEST_XLA): {meta['xla_level']}"
                                                  if "xla_level" in meta else ""))
        print(f"load average before {meta['load_before']}, after {meta['load_after']} "
              f"(other processes on the machine slow the run)")
        print(f"wall {wall:7.1f} s   CPU (pytest + workers) {meta['cpu_s']:7.1f} s   "
              f"= {meta['cpu_s'] / wall:.2f} cores on average   largest process {meta['maxrss_mb']:.0f} MB"
              f"   exit {meta['rc']}")
    tw = sum(r["wall"] for r in recs)
    tcpu = sum(cpu_s(r) for r in recs)
    phases = {k: sum(r["jax"].get(e, 0.0) for r in recs) for k, e in COMPILE_EVENTS.items()}
    tc = sum(phases.values())
    nc = sum(n_compiles(r) for r in recs)
    hits = sum(int(r["jax"].get(CACHE_HITS, 0)) for r in recs)
    print(f"sum of test wall {tw:7.1f} s: JAX compile {tc:6.1f} s ({100 * tc / tw:4.1f} %; "
          + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items())
          + f"), {nc} XLA compiles, {hits} persistent-cache hits; everything else {tw - tc:6.1f} s")
    print(f"sum of test CPU  {tcpu:7.1f} s (test processes and the subprocesses they waited for)")
    workers = collections.defaultdict(list)
    for r in recs:
        workers[r["worker"]].append(r)
    if len(workers) > 1:
        t0 = min(r["end"] - r["wall"] for r in recs)
        t1 = max(r["end"] for r in recs)
        for w, rs in sorted(workers.items()):
            busy = sum(r["wall"] for r in rs)
            last = max(r["end"] for r in rs)
            print(f"  worker {w}: {len(rs):4d} tests, busy {busy:7.1f} s, CPU {sum(map(cpu_s, rs)):7.1f} s, "
                  f"compile {sum(map(compile_s, rs)):6.1f} s, "
                  f"finished at {last - t0:6.1f} s ({t1 - last:5.1f} s before the last worker)")
    # On a loaded machine wall time measures the other tenants. A test that keeps one core busy takes about
    # its CPU seconds on an idle core; tests that wait (sleeps, a browser, polling) take longer than that.
    print(f"  idle-machine estimate (one core per worker, wall ~ CPU; LPT-scheduled by file): "
          f"{lpt_makespan([f['cpu'] for f in per_file(recs).values()], max(1, len(workers))):.0f} s")
    for f in sorted(out.glob("*.shutdown")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            print(f"  {r['worker']}: one gc.collect() at session end {r['gc_collect_s']:.2f} s "
                  f"({r['tracked_objects']} objects tracked, {r['frozen_objects']} frozen)")
    files = per_file(recs)
    print(f"\nfiles by CPU (top {top}):{'':18s}CPU s   wall s  compile s  compiles  hits  tests")
    for name, f in sorted(files.items(), key=lambda kv: -kv[1]["cpu"])[:top]:
        print(f"  {name:40s} {f['cpu']:7.1f}  {f['wall']:7.1f}  {f['compile']:8.1f}  {f['compiles']:8d}"
              f"  {f['hits']:4d}  {f['tests']:5d}")
    print(f"\nslowest tests by CPU (top {top}):{'':63s}CPU s  wall s  compile s  compiles")
    for r in sorted(recs, key=lambda r: -cpu_s(r))[:top]:
        print(f"  {r['nodeid'][:90]:90s} {cpu_s(r):6.1f}  {r['wall']:6.1f}  {compile_s(r):7.1f}  {n_compiles(r):6d}")


def write_costs(out: pathlib.Path) -> None:
    """tests/file_costs.json: CPU seconds per test file (file name -> s), the order tests/conftest.py schedules."""
    files = per_file(load(out))
    costs = {pathlib.PurePath(n).name: round(max(f["cpu"], 0.1), 1)
             for n, f in sorted(files.items(), key=lambda kv: -kv[1]["cpu"])}
    path = ROOT / "tests" / "file_costs.json"
    path.write_text(json.dumps(costs, indent=0) + "\n")
    print(f"wrote {path} ({len(costs)} files)")


def compare(old: pathlib.Path, new: pathlib.Path, top: int = 40) -> None:
    a, b = per_file(load(old)), per_file(load(new))
    print(f"per file, {old} -> {new}:   CPU s (old -> new)   wall s (old -> new)   compile s (old -> new)   tests")
    for name in sorted(set(a) | set(b), key=lambda n: -a.get(n, {"cpu": 0})["cpu"])[:top]:
        fa, fb = a.get(name, collections.Counter()), b.get(name, collections.Counter())
        print(f"  {name:40s} {fa['cpu']:6.1f} -> {fb['cpu']:6.1f}   {fa['wall']:6.1f} -> {fb['wall']:6.1f}"
              f"   {fa['compile']:6.1f} -> {fb['compile']:6.1f}   {fa['tests']:4d} -> {fb['tests']:4d}")
    ta, tb = sum(f["tests"] for f in a.values()), sum(f["tests"] for f in b.values())
    print(f"  {'total':40s} {sum(f['cpu'] for f in a.values()):6.1f} -> {sum(f['cpu'] for f in b.values()):6.1f}"
          f"   {sum(f['wall'] for f in a.values()):6.1f} -> {sum(f['wall'] for f in b.values()):6.1f}"
          f"   {sum(f['compile'] for f in a.values()):6.1f} -> {sum(f['compile'] for f in b.values()):6.1f}"
          f"   {ta:4d} -> {tb:4d}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, help="directory for the per-test records (default: a new temp dir)")
    ap.add_argument("--report", type=pathlib.Path, help="only summarise the records in this directory")
    ap.add_argument("--compare", type=pathlib.Path, nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--write-costs", action="store_true",
                    help="write the run's CPU seconds per file to tests/file_costs.json (conftest schedules by it)")
    ap.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: .ci/run's)")
    ns = ap.parse_args()
    if ns.compare:
        compare(*ns.compare)
        return 0
    if ns.report:
        report(ns.report, ns.top)
        if ns.write_costs:
            write_costs(ns.report)
        return 0
    out = ns.out or pathlib.Path(tempfile.mkdtemp(prefix="suite_timing_"))
    out.mkdir(parents=True, exist_ok=True)
    for f in out.glob("*.jsonl"):
        f.unlink()
    args = ns.pytest_args or ci_args()
    cmd = [sys.executable, "-m", "pytest", *args, "-p", "_suite_timing_plugin"]
    env = dict(os.environ, SUITE_TIMING_DIR=str(out))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT / "benchmarks"),
                                                     env.get("PYTHONPATH", "")) if p)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, cwd=ROOT, env=env)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    meta = {"command": " ".join(cmd[1:-2]), "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "maxrss_mb": ru.ru_maxrss / 1024, "rc": rc,
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "xla_level": os.environ.get("RECONRISK_TEST_XLA", "fast")}
    (out / "meta.json").write_text(json.dumps(meta))
    print()
    report(out, ns.top, meta)
    if ns.write_costs:
        write_costs(out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
