"""Hostile-user fuzz of the ``reconrisk`` command line, out of process (issue 10).

Every numeric flag of every command gets a list of hostile values (extremes,
NaN/inf, non-numeric text, hexadecimal, Arabic-Indic digits, 401-digit
integers, negative seeds, sizes of 10¹²), plus missing/unknown flags and
hostile ``--out`` paths. Each case runs ``python -m reconrisk …`` in a fresh
process with a per-case timeout; at most ``--jobs`` (≤ 2) run at once.

Each outcome is classified, and the table of issue 10 is printed:

* clean error — exit 2 and exactly one non-empty line on stderr;
* traceback — "Traceback" on stderr, or an exit code other than 0/2;
* hang — the per-case timeout was hit;
* multi-line exit-2 — exit 2 with more than one stderr line;
* silently accepted — exit 0 for a value that is outside the flag's domain;
* silently wrong — exit 0 but NaN in the output, or a Python warning on stderr.

Usage: ``PYTHONPATH=src python3.11 benchmarks/fuzz_cli.py [--jobs 2] [--timeout 60] [--limit N]``.
Exit status 1 when any failure column is non-zero.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

# -- the flags -------------------------------------------------------------------------
# domain: pos (> 0 real), nonneg (>= 0 real), prob ((0, 1)), q ((0, 1]), mom ([0, 1)), real (any finite),
#         int1 (integer >= 1), int0 (integer >= 0), int2 (integer >= 2), seed (integer >= 0)

BASES = {
    "bound": (["bound", "-s", "1", "-q", "0.01", "-T", "100", "-n", "100", "--json"], {
        "-s": "pos", "-q": "q", "-T": "int1", "-n": "int2", "--kappa": "prob", "--delta": "prob",
        "--confidence": "prob",
    }),
    "bound-mc": (["bound", "-s", "1", "-q", "0.5", "-T", "3", "-n", "10", "--method", "mc", "--samples", "2000",
                  "--json"], {"--samples": "int1", "--seed": "seed", "--confidence": "prob"}),
    "calibrate": (["calibrate", "-g", "0.05", "-q", "0.01", "-T", "100", "-n", "100", "--json"], {
        "-g": "prob", "-q": "q", "-T": "int1", "-n": "int2", "--kappa": "prob", "--delta": "prob",
    }),
    "curve": (["curve", "-T", "10", "-n", "10", "--points", "2", "--sample-rates", "0.5", "--epsilon-max", "4",
               "--json", "--out", "{tmp}"], {
        "-T": "int1", "-q": "q", "-n": "int2", "--epsilon-min": "pos", "--epsilon-max": "pos", "--points": "int1",
        "--fixed-epsilon": "pos", "--sample-rates": "q", "--delta": "prob",
    }),
    "mse-bound": (["mse-bound", "-e", "1", "--json"], {"-e": "pos", "--diam": "pos"}),
    "mse-bound-sgd": (["mse-bound", "-s", "1", "-q", "0.01", "-T", "100", "--json"], {
        "-s": "pos", "-q": "q", "-T": "int1",
    }),
    "fil-logreg": (["fil", "logreg", "--trials", "50", "--no-figures", "--json", "--out", "{tmp}"], {
        "--lam": "pos", "--noise": "pos", "--trials": "int0", "--seed": "seed",
    }),
    "fil-dpsgd": (["fil", "dpsgd", "--model", "logistic", "-T", "2", "--num-coords", "2", "--json"], {
        "-s": "pos", "-q": "q", "-T": "int1", "-C": "pos", "--learning-rate": "pos", "--momentum": "mom",
        "--num-coords": "int1", "--runs": "int1", "--delta": "prob", "--seed": "seed",
    }),
    "audit": (["audit", "-e", "4", "-T", "2", "--trials", "2", "-n", "2", "--known-size", "20", "--model", "logistic",
               "--attack", "alg2", "--no-plot", "--json", "--out", "{tmp}"], {
        "-e": "pos", "--noise-multiplier": "pos", "-q": "q", "-T": "int1", "-C": "pos", "-n": "int2",
        "--trials": "int1", "--known-size": "int1", "--learning-rate": "pos", "--delta": "prob", "--seed": "seed",
    }),
    "analytic-bound": (["analytic", "bound", "--metric", "psnr", "--eta", "20", "--noise-multiplier", "0.02",
                        "--dim", "784", "--min-norm", "5", "--json"], {
        "--noise-multiplier": "pos", "--dim": "int1", "--eta": "real", "--min-norm": "pos", "--data-range": "pos",
        "--averaged": "int1", "--clip-norm": "pos",
    }),
    "analytic-calibrate": (["analytic", "calibrate", "--metric", "mse", "--eta", "0.01", "--gamma", "0.05",
                            "--dim", "784", "--min-norm", "5", "--json"], {
        "--eta": "pos", "--gamma": "prob", "--dim": "int1", "--min-norm": "pos", "--averaged": "int1",
    }),
    "analytic-calibrate-psnr": (["analytic", "calibrate", "--metric", "psnr", "--eta", "20", "--gamma", "0.05",
                                 "--dim", "784", "--min-norm", "5", "--json"], {"--data-range": "pos"}),
    "analytic-dp": (["analytic", "dp", "--delta", "1e-5", "--noise-multiplier", "1", "--json"], {
        "--delta": "prob", "--noise-multiplier": "pos", "--steps": "int1",
    }),
    "analytic-dp-eps": (["analytic", "dp", "--delta", "1e-5", "--eps", "1", "--json"], {"--eps": "pos"}),
    "analytic-simulate": (["analytic", "simulate", "--noise-multipliers", "0.1", "--samples", "3", "--dim", "2",
                           "--rows", "4", "--no-figure", "--json", "--out", "{tmp}"], {
        "--samples": "int1", "--dim": "int1", "--rows": "int1", "--clip-norm": "pos", "--data-range": "pos",
        "--seed": "seed", "--noise-multipliers": "pos",
    }),
}

VALUES = [
    "1e308", "5e-324", "-1", "0", "-0", "nan", "inf", "-inf", "1e12", "", "abc", "0x10", "\u0661\u0662",
    "18446744073709551616", "1" * 401, "1.5", "True", "1e-300", "0.5", "2", "-1e308", "1e400",
]


def in_domain(domain: str, text: str) -> bool | None:
    """True/False when the value is inside/outside the flag's domain; None if it may be refused for size."""
    try:
        if text.strip() != text or not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text):
            return False
        x = float(text)
    except ValueError:
        return False
    import math

    if not math.isfinite(x):
        return False
    if domain in ("int1", "int0", "int2", "seed"):
        if not re.fullmatch(r"[+-]?\d+", text):
            return False
        n = int(text)
        lo = {"int1": 1, "int0": 0, "int2": 2, "seed": 0}[domain]
        if n < lo:
            return False
        return True if n <= 10**6 or domain == "seed" else None
    if domain == "pos":
        return True if x > 0 else False
    if domain == "nonneg":
        return x >= 0
    if domain == "prob":
        return 0 < x < 1
    if domain == "q":
        return 0 < x <= 1
    if domain == "mom":
        return 0 <= x < 1
    return True


@dataclass
class Case:
    name: str
    argv: list[str]
    expect_error: bool  # the input is outside the documented domain


def build_cases() -> list[Case]:
    cases: list[Case] = []
    for cmd, (base, flags) in BASES.items():
        for flag, domain in flags.items():
            for val in VALUES:
                argv = list(base)
                if flag in argv:
                    i = argv.index(flag)
                    argv[i + 1] = val
                else:
                    argv += [flag, val]
                dom = in_domain(domain, val)
                cases.append(Case(f"{cmd} {flag} {val[:20]!r}", argv, dom is False))
        # structural: missing value, unknown flag, missing required flag
        cases.append(Case(f"{cmd} unknown flag", base + ["--bogus-flag", "1"], True))
        cases.append(Case(f"{cmd} dangling flag", base + [list(flags)[0]], True))
    outs = ["/proc/reconrisk-out", "{file}", "{file}/sub", "", "/dev/null", "{ro}"]
    for cmd in ("curve", "fil-logreg", "audit", "analytic-simulate"):
        base, _ = BASES[cmd]
        for o in outs:
            argv = list(base)
            argv[argv.index("--out") + 1] = o
            cases.append(Case(f"{cmd} --out {o!r}", argv, True))
    for argv in (["bound"], ["bound", "-s"], ["calibrate", "-g", "0.05"], ["nonsense-command"], ["fil", "bogus"],
                 ["analytic", "figures", "--mode", "bogus", "--json", "--out", "{tmp}"],
                 ["analytic", "calibrate", "--metric", "psnr", "--eta", "20", "--gamma", "0.05", "--dim", "784",
                  "--min-norm", "5", "--data-range", "nan"],
                 ["audit", "--model", "mlp:100000000", "--json", "--out", "{tmp}"],
                 ["audit", "--dataset", "mnist:/nonexistent", "--json", "--out", "{tmp}"],
                 ["audit", "--dataset", "cifar10:{file}", "--json", "--out", "{tmp}"],
                 ["audit", "--dataset", "bogus", "--json", "--out", "{tmp}"],
                 ["fil", "dpsgd", "--model", "mlp:100000000", "--json"],
                 ["bound", "-s", "1", "-q", "0.01", "-T", "100", "-n", "100", "--method", "bogus"]):
        cases.append(Case(" ".join(argv)[:60], argv, True))
    return cases


def run_case(case: Case, timeout: float, tmp_root: str) -> tuple[Case, str, str]:
    work = tempfile.mkdtemp(dir=tmp_root)
    afile = os.path.join(work, "a-file")
    with open(afile, "w") as fh:
        fh.write("not a directory\n")
    ro = os.path.join(work, "ro")
    os.mkdir(ro)
    os.chmod(ro, 0o500)
    argv = [a.replace("{tmp}", os.path.join(work, "out")).replace("{file}", afile).replace("{ro}", ro + "/x")
            for a in case.argv]
    env = dict(os.environ, COLUMNS="120", JAX_PLATFORMS="cpu", PYTHONWARNINGS="default")
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "reconrisk", *argv], capture_output=True, text=True,
                           timeout=timeout, cwd=work, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return case, "hang", f"> {timeout:g} s"
    finally:
        os.chmod(ro, 0o700)
    dt = time.perf_counter() - t0
    err_lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    if "Traceback" in p.stderr or p.returncode not in (0, 2):
        tail = err_lines[-1] if err_lines else f"exit {p.returncode}"
        return case, "traceback", tail[:160]
    if p.returncode == 2:
        if len(err_lines) != 1:
            return case, "multi-line exit-2", " | ".join(err_lines)[:160]
        return case, "clean error", err_lines[0][:160]
    if case.expect_error:
        return case, "silently accepted", f"exit 0 in {dt:.1f} s"
    if re.search(r"\bnan\b", p.stdout, re.I) or re.search(r"Warning", p.stderr):
        return case, "silently wrong", (err_lines[0] if err_lines else "NaN in output")[:160]
    return case, "valid result", f"{dt:.1f} s"


COLUMNS = ["tried", "clean error", "valid result", "tracebacks", "hangs", "multi-line exit-2", "silently accepted",
           "silently wrong"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--limit", type=int, default=0, help="run only the first N cases (0: all)")
    ap.add_argument("--only", default="", help="substring filter on case names")
    ap.add_argument("--verbose", action="store_true", help="print every case's outcome")
    args = ap.parse_args()
    jobs = max(1, min(2, args.jobs))
    cases = [c for c in build_cases() if args.only in c.name]
    if args.limit:
        cases = cases[: args.limit]
    counts: collections.Counter = collections.Counter()
    failures: list[tuple[str, str, str]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_root, cf.ThreadPoolExecutor(jobs) as pool:
        for case, kind, detail in pool.map(lambda c: run_case(c, args.timeout, tmp_root), cases):
            counts[kind] += 1
            if args.verbose:
                print(f"{kind:18s} {case.name}: {detail}", flush=True)
            if kind not in ("clean error", "valid result"):
                failures.append((kind, case.name, detail))
    elapsed = time.perf_counter() - t0
    key = {"tracebacks": "traceback", "hangs": "hang"}
    print(f"\nreconrisk CLI fuzz: {len(cases)} cases, {jobs} at a time, timeout {args.timeout:g} s, "
          f"{elapsed:.0f} s wall")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    row = [len(cases)] + [counts[key.get(c, c)] for c in COLUMNS[1:]]
    print("| " + " | ".join(str(x) for x in row) + " |")
    for kind, name, detail in failures:
        print(f"  {kind}: {name}: {detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
