"""Schedules whose every step differs (issue 42, item 1): reconrisk against dp_accounting's PLD accountant.

In ONE run, each measurement in a fresh process (so imports and peak memory are its own):

* ``uptime`` before and after (figures taken at a load above ~1 on the shared 2-core machine are slower, for
  both tools alike: read the ratio);
* reconrisk's time for a 10⁴-distinct-step schedule (σ_t = 2·0.99993^t, as ``opacus.schedulers.ExponentialNoise``
  makes; q 0.01): ε(1e-5) two-sided and the ReRo(κ = 0.01) bracket, with the brackets' relative widths;
* dp_accounting's ``PLDAccountant`` (value discretisation 1e-4, its default) for the issue's 100-segment schedule
  (σ 1.000 … 1.099, 100 steps each, q 0.01, ε at 1e-5), and the ratio ours / dp_accounting's (target ≤ 1/5);
* reconrisk's peak memory (max RSS of the process) at 10³ and at 10⁴ distinct steps (10⁴ steps in all);
* the issue's table: 10 / 30 / 100 segments (σ from 1.000 in steps of 0.001, 10⁴ steps in all, q 0.01): ε(1e-5)
  (the accountant's number, upper end) by reconrisk and by dp_accounting.

    python benchmarks/bench_schedule.py                       # this tree
    python benchmarks/bench_schedule.py --src /work/main/src  # the "before": another tree's sources

``--limit`` (seconds, default 300) stops a measurement that runs longer (printed as "> limit").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

_OURS = r"""
import json, resource, sys, time
import numpy as np
t0 = time.perf_counter()
from reconrisk._src.release import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "decay":  # n distinct steps, 10⁴ in all
    sig = 2.0 * 0.99993 ** (np.arange(n) * (10_000 // n))
    segs = [(float(s), 0.01, 10_000 // n) for s in sig]
else:  # the issue's table: n segments, σ 1.000 + 0.001 i
    segs = [(1.0 + 0.001 * i, 0.01, 10_000 // n) for i in range(n)]
r = Release.schedule(segs)
t_import = time.perf_counter() - t0
t = time.perf_counter()
a = PrivacyAnalysis(r)
out = {}
if kind == "decay":
    e = a.epsilon(1e-5, two_sided=True)
    b = a.rero(0.01)
    out.update(eps=[e.lower, e.upper], rero=[b.lower, b.upper])
else:
    out.update(eps=[None, a.epsilon(1e-5).upper])
out["seconds"] = time.perf_counter() - t
out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT " + json.dumps(out))
"""

_DPA = r"""
import json, sys, time
import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant as pa
n = int(sys.argv[1])
t = time.perf_counter()
acc = pa.PLDAccountant(value_discretization_interval=1e-4)
for i in range(n):
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0 + 0.001 * i)),
                                        10_000 // n))
eps = acc.get_epsilon(1e-5)
print("RESULT " + json.dumps({"eps": [None, eps], "seconds": time.perf_counter() - t}))
"""


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "load average: %.2f, %.2f, %.2f" % os.getloadavg()


def _run(code: str, args: list[str], src: Path, limit: float) -> dict | None:
    env = dict(os.environ, PYTHONPATH=str(src))
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                           timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"measurement failed ({args}):\n{p.stderr[-2000:]}")


def _fmt(res: dict | None, limit: float) -> str:
    return f"> {limit:.0f} s" if res is None else f"{res['seconds']:.2f} s"


def _rel(pair) -> str:
    lo, up = pair
    return "-" if lo is None else f"{(up - lo) / up:.3%}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=HERE, help="the src folder of the tree to measure (default: this)")
    ap.add_argument("--limit", type=float, default=300.0, help="seconds per measurement (default 300)")
    ap.add_argument("--no-table", action="store_true", help="skip the 10/30/100-segment table")
    args = ap.parse_args(argv)
    src, limit = args.src.resolve(), args.limit
    print(f"uptime: {_uptime()}")
    print(f"reconrisk sources: {src}")
    big = _run(_OURS, ["decay", "10000"], src, limit)
    dpa100 = _run(_DPA, ["100"], src, limit)
    small = _run(_OURS, ["decay", "1000"], src, limit)
    print("\n10⁴ distinct steps (σ_t = 2·0.99993^t, q 0.01): ε(1e-5) two-sided + ReRo(κ 0.01)")
    if big is not None:
        print(f"  reconrisk: {big['seconds']:.2f} s   ε [{big['eps'][0]:.4f}, {big['eps'][1]:.4f}] (width "
              f"{_rel(big['eps'])})   ReRo [{big['rero'][0]:.5f}, {big['rero'][1]:.5f}] (width {_rel(big['rero'])})")
    else:
        print(f"  reconrisk: > {limit:.0f} s")
    print(f"  dp_accounting PLDAccountant, the issue's 100 segments: {_fmt(dpa100, limit)}"
          + ("" if dpa100 is None else f"   ε {dpa100['eps'][1]:.4f}"))
    if big is not None and dpa100 is not None:
        print(f"  ratio reconrisk(10⁴ distinct) / dp_accounting(100 segments): {big['seconds'] / dpa100['seconds']:.3f}"
              "   (target ≤ 0.2)")
    for name, res in (("10³", small), ("10⁴", big)):
        if res is not None:
            print(f"  peak memory (max RSS) at {name} distinct steps: {res['max_rss_mb']:.0f} MiB")
    if not args.no_table:
        print("\nthe issue's table (σ from 1.000 in steps of 0.001, q 0.01, 10⁴ steps in all): ε(1e-5)")
        print(f"  {'segments':>8}  {'reconrisk':>10}  {'dp_accounting':>13}  {'ratio':>6}  {'ε reconrisk':>11}  {'ε dpa':>8}")
        for n in (10, 30, 100):
            ours = _run(_OURS, ["table", str(n)], src, limit)
            theirs = dpa100 if n == 100 else _run(_DPA, [str(n)], src, limit)
            ratio = "-" if ours is None or theirs is None else f"{ours['seconds'] / theirs['seconds']:.3f}"
            e_o = "-" if ours is None else f"{ours['eps'][1]:.4f}"
            e_d = "-" if theirs is None else f"{theirs['eps'][1]:.4f}"
            print(f"  {n:>8}  {_fmt(ours, limit):>10}  {_fmt(theirs, limit):>13}  {ratio:>6}  {e_o:>11}  {e_d:>8}")
    print(f"\nuptime: {_uptime()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
