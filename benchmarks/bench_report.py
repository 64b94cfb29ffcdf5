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
    python3.11 benchmarks/bench_report.py --baseline-src /tmp/base/src --extremes   # + issue 22 item 5

Targets (issue 22): the report ≥ 5× faster than the baseline with the same numbers, ``calibrate --target-rero``
≤ 1.5 s. The machine's load average (1 min) is printed before and after each command: on a shared 2-core
machine only figures taken at a load below ~1 compare.

``--extremes`` adds issue 22 item 5: ``PrivacyAnalysis(Release(σ, q, T)).rero(1e-12)`` for σ ∈ {0.5, 1, 2},
q ∈ {1e-6, 1e-4}, T ∈ {10³, 10⁵} (target: relative width ≤ 1 % in ≤ 2 s, or an honest ``converged: false``
with its reason) and the sample-rate calibration of the issue (κ 1.437e-11, σ 0.8285, T 3,810, target
6.753e-11), each in a fresh process with a time limit, for both trees.
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
import importlib, sys
try:  # this tree (the implementation under reconrisk._src) or a baseline from before the move  # src_move: keep
    pld = importlib.import_module("reconrisk._src.accounting.pld")
    main = importlib.import_module("reconrisk._src.cli").main
except ModuleNotFoundError:
    pld = importlib.import_module("reconrisk.accounting.pld")  # src_move: keep
    main = importlib.import_module("reconrisk.cli").main  # src_move: keep
n = [0]; orig = pld.compose_segments
def wrap(*a, **k):
    n[0] += 1
    return orig(*a, **k)
pld.compose_segments = wrap
code = main(sys.argv[1:])
print(f"COMPOSITIONS {n[0]}", file=sys.stderr)
sys.exit(code or 0)
"""


#: Python caches compiled modules as an installed package does (set by --no-bytecode-cache: every run compiles
#: the sources again, ~0.3 s of CPU on this machine for either tree)
BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}


def run(src: Path, args: list[str], out_dir: str | None = None) -> tuple[float, str, int]:
    env = {**os.environ, "PYTHONPATH": str(src), **BYTECODE}
    if not env["PYTHONDONTWRITEBYTECODE"]:
        env.pop("PYTHONDONTWRITEBYTECODE")
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


#: issue 22 item 5: one extreme question in a fresh process (wall time of the question, after the imports)
_EXTREME = r"""
import json, sys, time
from reconrisk import Release
s, q, T, k = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
try:
    from reconrisk._src.analysis.privacy import PrivacyAnalysis
    ask = lambda: PrivacyAnalysis(Release(s, q, T)).rero(k)
except ImportError:  # a baseline before the analysis object
    import reconrisk as rr
    ask = lambda: rr.rero_bound(s, q, T, kappa=k)
t0 = time.perf_counter()
b = ask()
note = (getattr(b, "details", None) or {}).get("note", "")
print(json.dumps(dict(time=time.perf_counter() - t0, lower=b.lower, upper=b.upper, converged=b.converged, note=note)))
"""
_QSOLVE = r"""
import json, time
t0 = time.perf_counter()
try:
    try:
        from reconrisk._src.analysis.calibrate import calibrate
    except ImportError:  # a baseline before the one calibrator
        from reconrisk._src.analysis.calibrate_risk import calibrate_risk
        c = calibrate_risk("reconstruction", 6.753e-11, "sample-rate", noise_multiplier=0.8285, steps=3810,
                           kappa=1.437e-11)
        out = dict(sample_rate=c["sample_rate"], upper=c.get("upper"))
    else:
        c = calibrate("reconstruction", 6.753e-11, "sample_rate", noise_multiplier=0.8285, steps=3810,
                      kappa=1.437e-11)
        out = dict(sample_rate=c.sample_rate, upper=c.bound.upper, evaluations=c.evaluations)
except Exception as exc:
    out = dict(error=str(exc)[:160])
out["time"] = time.perf_counter() - t0
print(json.dumps(out))
"""
EXTREMES = [(s, q, t) for s in (0.5, 1.0, 2.0) for q in (1e-6, 1e-4) for t in (1000, 100_000)]


def _child(src: Path, code: str, args: list[str], timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), **BYTECODE}
    if not env["PYTHONDONTWRITEBYTECODE"]:
        env.pop("PYTHONDONTWRITEBYTECODE")
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def extremes(baseline: Path, timeout: float) -> None:
    print(f"\n== issue 22 item 5: ReRo at kappa = 1e-12 (target: relative width <= 1 % in <= 2 s); "
          f"load {_load()} at start")
    for s, q, t in EXTREMES:
        for who, src in (("baseline", baseline), ("this", HERE)):
            r = _child(src, _EXTREME, [repr(s), repr(q), str(t), "1e-12"], timeout)
            label = f"sigma={s} q={q:g} T={t:.0e}"
            if "error" in r:
                print(f"  {label:<26} {who:9s} {r['error']}")
                continue
            rel = (r["upper"] - r["lower"]) / r["upper"]
            ok = "met" if rel <= 0.01 and r["time"] <= 2.0 else "missed"
            print(f"  {label:<26} {who:9s} {r['time']:7.2f} s  [{r['lower']:.4g}, {r['upper']:.4g}]  rel width "
                  f"{rel:.2e}  converged={r['converged']}  {ok}  {r['note'][:110]}")
    print(f"  sample rate for target 6.753e-11 at kappa 1.437e-11, sigma 0.8285, T 3810 (load {_load()}):")
    for who, src in (("baseline", baseline), ("this", HERE)):
        print(f"    {who:9s} {_child(src, _QSOLVE, [], timeout)}")
    print(f"  load {_load()} at end")


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, required=True, help="src/ folder of the baseline checkout")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--extremes", action="store_true", help="also issue 22 item 5 (minutes on the baseline)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per extreme question")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="compile the sources in every run (PYTHONDONTWRITEBYTECODE=1), as in this machine's shells")
    args = ap.parse_args()
    if args.no_bytecode_cache:
        BYTECODE["PYTHONDONTWRITEBYTECODE"] = "1"
    print("bytecode: " + ("compiled in every run" if args.no_bytecode_cache else
                          "cached as an installed package's (one untimed warm-up run per tree and command)"))
    for name, cmd in (("report", REPORT), ("report", REPORT_NO_MC), ("calibrate --target-rero", CALIBRATE)):
        times = {"this": [], "baseline": []}
        outs, counts = {}, {}
        if not args.no_bytecode_cache:
            for src in (HERE, args.baseline_src):
                with tempfile.TemporaryDirectory() as d:
                    run(src, cmd[:-2] + ["--samples", "100"] if name == "report" else cmd, d if name == "report" else None)
        load_before = _load()
        for _ in range(args.repeats):
            for who, src in (("this", HERE), ("baseline", args.baseline_src)):
                with tempfile.TemporaryDirectory() as d:
                    wall, out, count = run(src, cmd, d if name == "report" else None)
                times[who].append(wall)
                outs[who], counts[who] = json.loads(out), count
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"\n== reconrisk {' '.join(cmd)}   (load average {load_before} before, {_load()} after)")
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
            mc = {w: outs[w].get("rero", {}).get("mc", {}) for w in outs}
            if mc["this"].get("estimate") is not None:
                print("  Monte Carlo (same samples, same seed, its own random stream per tree): "
                      + "; ".join(f"{w} {m['estimate']:.4f} in [{m['lower']:.4f}, {m['upper']:.4f}]" for w, m in mc.items()))
        if name.startswith("calibrate"):
            print(f"  target <= 1.5 s: {'met' if med['this'] <= 1.5 else 'MISSED'} (median of this tree)")
    if args.extremes:
        extremes(args.baseline_src, args.timeout)


if __name__ == "__main__":
    main()
