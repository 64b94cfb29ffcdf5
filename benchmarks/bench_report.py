"""``reconrisk report`` and ``reconrisk calibrate --target-rero`` against a baseline checkout (issue 22).

Runs the report command of the issue (the README's before this round), the same without its Monte-Carlo row
(``--samples 0``: the Monte Carlo draws the same 2·10⁸ normals in both trees, so it bounds the ratio), and the
calibrate command, with this tree's sources and with a baseline's
(``--baseline-src``: the ``src`` folder of an older checkout, e.g. ``git worktree add /tmp/base <commit>``),
interleaved A B A B … in fresh processes, and prints for each: the median wall time, the ratio baseline / this,
the number of privacy-loss-distribution compositions (``compose_segments`` calls, counted in-process), and how
the numbers compare — the largest relative difference over every number of the two JSON reports, and whether
every certified bracket of one overlaps the other's.

    git worktree add /tmp/base 5e38172          # main before the analysis object
    python3.11 benchmarks/bench_report.py --baseline-src /tmp/base/src --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
REPORT = ["report", "-s", "1", "-q", "0.01", "-T", "1000", "--prior-size", "10", "--target-rero", "0.15",
          "--model-dim", "7960", "--samples", "100000"]
#: the same report without its Monte-Carlo row: every number the privacy-loss distributions give
REPORT_NO_MC = REPORT[:-1] + ["0"]
CALIBRATE = ["calibrate", "--target-rero", "0.05", "--prior-size", "100", "--sample-rate", "0.01", "--steps", "1000"]

#: runs the CLI in-process with compose_segments wrapped, prints the count on stderr
_COUNTING = r"""
import sys, reconrisk.accounting.pld as pld
n = [0]; orig = pld.compose_segments
def wrap(*a, **k):
    n[0] += 1
    return orig(*a, **k)
pld.compose_segments = wrap
from reconrisk.cli import main
code = main(sys.argv[1:])
print(f"COMPOSITIONS {n[0]}", file=sys.stderr)
sys.exit(code or 0)
"""


def run(src: Path, args: list[str], out_dir: str | None = None) -> tuple[float, str, int]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    extra = ["--out", out_dir] if out_dir is not None else []
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _COUNTING, *args, *extra, "--json"], env=env, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{src}: {' '.join(args)} failed:\n{p.stderr[-2000:]}")
    count = int(p.stderr.rsplit("COMPOSITIONS", 1)[1].split()[0])
    return wall, p.stdout, count


def _numbers(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path, float(x)


def compare(new: dict, old: dict) -> tuple[float, str, int, int]:
    """(largest relative difference, where, numbers compared, brackets that do not overlap)."""
    a, b = dict(_numbers(new)), dict(_numbers(old))
    worst, where, n = 0.0, "", 0
    for k in a.keys() & b.keys():
        x, y = a[k], b[k]
        if x == y or not (abs(x) < float("inf") and abs(y) < float("inf")):
            continue
        n += 1
        d = abs(x - y) / max(abs(x), abs(y), 1e-300)
        if d > worst:
            worst, where = d, k
    disjoint = []
    for k in a.keys() & b.keys():
        if k.endswith(".lower"):
            u = k[: -len("lower")] + "upper"
            if u in a and u in b and (a[k] > b[u] * (1 + 1e-12) or b[k] > a[u] * (1 + 1e-12)):
                disjoint.append(k[: -len(".lower")])
    return worst, where, n, disjoint


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, required=True, help="src/ folder of the baseline checkout")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    for name, cmd in (("report", REPORT), ("report", REPORT_NO_MC), ("calibrate --target-rero", CALIBRATE)):
        times = {"this": [], "baseline": []}
        outs, counts = {}, {}
        for _ in range(args.repeats):
            for who, src in (("this", HERE), ("baseline", args.baseline_src)):
                with tempfile.TemporaryDirectory() as d:
                    wall, out, count = run(src, cmd, d if name == "report" else None)
                times[who].append(wall)
                outs[who], counts[who] = json.loads(out), count
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"\n== reconrisk {' '.join(cmd)}")
        for who in ("baseline", "this"):
            print(f"  {who:9s} median {med[who]:7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times[who])}),"
                  f"  PLD compositions {counts[who]}")
        print(f"  speed-up baseline/this: {med['baseline'] / med['this']:.2f}x")
        worst, where, n, disjoint = compare(outs["this"], outs["baseline"])
        print(f"  numbers: {n} differ; largest relative difference {worst:.3g} at {where or '-'}; "
              f"brackets that do not overlap: {len(disjoint)} {disjoint} (a calibration's bracket is at its own σ)")
        if name == "report":
            print(f"  the report's own release: {outs['this'].get('analysis', {}).get('compositions')} compositions "
                  "(the rest are the calibrator's candidate releases)")


if __name__ == "__main__":
    main()
