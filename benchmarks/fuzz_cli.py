"""Hostile-user fuzz of the ``reconrisk`` command line, out of process (issue 10).

Every numeric flag of every command gets a list of hostile values (extremes,
NaN/inf, non-numeric text, hexadecimal, Arabic-Indic digits, 401-digit
integers, negative seeds, sizes of 10¹²), plus missing/unknown flags and
hostile ``--out`` paths. Each case runs in its own process with a per-case timeout (by default a
child forked from a parent that imported reconrisk once; ``--exec`` starts a
fresh ``python -m reconrisk`` instead); at most ``--jobs`` (≤ 2) run at once.

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
    "tradeoff": (["tradeoff", "-s", "1", "-q", "0.01", "-T", "10", "--points", "5", "--json", "--out", "{tmp}"], {
        "-s": "pos", "-q": "q", "-T": "int1", "--points": "int2", "--alpha-min": "prob", "--alpha-max": "prob",
    }),
    "vmf-epsilon": (["vmf", "epsilon", "-k", "10", "-p", "10", "-q", "0.5", "-N", "3", "--delta", "1e-5", "--json"], {
        "-k": "pos", "-p": "int2", "-N": "int1",
    }),
    "mse-bound": (["mse-bound", "-e", "1", "--json"], {"-e": "pos", "--diam": "pos"}),
    "mse-bound-sgd": (["mse-bound", "-s", "1", "-q", "0.01", "-T", "100", "--json"], {
        "-s": "pos", "-q": "q", "-T": "int1",
    }),
    "fil-logreg": (["fil", "logreg", "--trials", "50", "--no-figures", "--json", "--out", "{tmp}"], {
        "--lam": "pos", "--noise-std": "pos", "--trials": "int0", "--seed": "seed",
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
    "analytic-calibrate": (["analytic", "calibrate", "--metric", "mse", "--eta", "0.01", "--target-rero", "0.05",
                            "--dim", "784", "--min-norm", "5", "--json"], {
        "--eta": "pos", "--target-rero": "prob", "--dim": "int1", "--min-norm": "pos", "--averaged": "int1",
    }),
    "analytic-calibrate-psnr": (["analytic", "calibrate", "--metric", "psnr", "--eta", "20", "--target-rero", "0.05",
                                 "--dim", "784", "--min-norm", "5", "--json"], {"--data-range": "pos"}),
    "analytic-dp": (["analytic", "dp", "--delta", "1e-5", "--noise-multiplier", "1", "--json"], {
        "--delta": "prob", "--noise-multiplier": "pos", "--steps": "int1",
    }),
    "analytic-dp-eps": (["analytic", "dp", "--delta", "1e-5", "--epsilon", "1", "--json"], {"--epsilon": "nonneg"}),
    "analytic-simulate": (["analytic", "simulate", "--noise-multipliers", "0.1", "--samples", "3", "--dim", "2",
                           "--rows", "4", "--no-figure", "--json", "--out", "{tmp}"], {
        "--samples": "int1", "--dim": "int1", "--rows": "int1", "--clip-norm": "pos", "--data-range": "pos",
        "--seed": "seed", "--noise-multipliers": "pos",
    }),
}

VALUES = [
    "1e308", "5e-324", "-1", "0", "nan", "inf", "1e12", "1000000000000", "", "abc", "0x10", "\u0661\u0662",
    "18446744073709551616", "1" * 401, "9" * 5000,  # past Python's 4,300-digit string limit (issue 39)
]


#: Commands whose valid requests train with JAX; their in-domain values are sampled sparingly.
SLOW = ("audit", "fil-dpsgd")


def in_domain(domain: str, text: str) -> bool | None:
    """True/False when the value is inside/outside the flag's domain; None if it may be refused for size."""
    if re.fullmatch(r"[+-]?\d{4000,}", text):  # int() itself refuses it (Python's digit limit): any clean error
        return None
    if domain in ("int1", "int0", "int2", "seed") and re.fullmatch(r"[+-]?\d+", text):
        n = int(text)
        if n < {"int1": 1, "int0": 0, "int2": 2, "seed": 0}[domain]:
            return False
        return True if n <= 10**6 or domain == "seed" else None
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
                if cmd in SLOW and dom is True and domain != "seed":
                    continue  # a valid value starts a JAX training run (~1 min on a loaded box): seeds only
                cases.append(Case(f"{cmd} {flag} {val[:20]!r}", argv, dom is False))
        # structural: missing value, unknown flag, missing required flag
        cases.append(Case(f"{cmd} unknown flag", base + ["--bogus-flag", "1"], True))
        cases.append(Case(f"{cmd} dangling flag", base + [list(flags)[0]], True))
    # a read-only folder stops only non-root users (root writes anyway), so it is tried only then
    outs = ["/proc/reconrisk-out", "{file}", "{file}/sub", "", "/dev/null"] + (["{ro}"] if os.geteuid() != 0 else [])
    for cmd in ("curve", "tradeoff", "fil-logreg", "audit", "analytic-simulate"):
        base, _ = BASES[cmd]
        for o in outs:
            argv = list(base)
            argv[argv.index("--out") + 1] = o
            cases.append(Case(f"{cmd} --out {o!r}", argv, True))
    for argv in (["bound"], ["bound", "-s"], ["calibrate", "-g", "0.05"], ["nonsense-command"], ["fil", "bogus"],
                 ["analytic", "figures", "--mode", "bogus", "--json", "--out", "{tmp}"],
                 ["analytic", "calibrate", "--metric", "psnr", "--eta", "20", "--target-rero", "0.05", "--dim", "784",
                  "--min-norm", "5", "--data-range", "nan"],
                 ["audit", "--model", "mlp:100000000", "--json", "--out", "{tmp}"],
                 ["audit", "--dataset", "mnist:/nonexistent", "--json", "--out", "{tmp}"],
                 ["audit", "--dataset", "cifar10:{file}", "--json", "--out", "{tmp}"],
                 ["audit", "--dataset", "bogus", "--json", "--out", "{tmp}"],
                 ["fil", "dpsgd", "--model", "mlp:100000000", "--json"],
                 ["bound", "-s", "1", "-q", "0.01", "-T", "100", "-n", "100", "--method", "bogus"]):
        cases.append(Case(" ".join(argv)[:60], argv, True))
    return cases


def _scratch(tmp_root: str) -> tuple[str, str, str]:
    work = tempfile.mkdtemp(dir=tmp_root)
    afile = os.path.join(work, "a-file")
    with open(afile, "w") as fh:
        fh.write("not a directory\n")
    ro = os.path.join(work, "ro")
    os.mkdir(ro)
    os.chmod(ro, 0o500)
    return work, afile, ro


def _argv(case: Case, work: str, afile: str, ro: str) -> list[str]:
    return [a.replace("{tmp}", os.path.join(work, "out")).replace("{file}", afile).replace("{ro}", ro + "/x")
            for a in case.argv]


def classify(case: Case, rc: int | None, out: str, err: str, dt: float, timeout: float) -> tuple[str, str]:
    if rc is None:
        return "hang", f"> {timeout:g} s"
    err_lines = [ln for ln in err.splitlines() if ln.strip()]
    if "Traceback" in err or rc not in (0, 2):
        tail = err_lines[-1] if err_lines else f"exit {rc}"
        return "traceback", tail[:160]
    if rc == 2:
        if len(err_lines) != 1:
            return "multi-line exit-2", " | ".join(err_lines)[:160]
        return "clean error", err_lines[0][:160]
    if case.expect_error:
        return "silently accepted", f"exit 0 in {dt:.1f} s"
    if re.search(r"\bnan\b", out, re.I) or re.search(r"Warning", err):
        return "silently wrong", (err_lines[0] if err_lines else "NaN in output")[:160]
    return "valid result", f"{dt:.1f} s"


_ENV = {"COLUMNS": "120", "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "default"}


def run_case_exec(case: Case, timeout: float, tmp_root: str) -> tuple[Case, str, str]:
    """One case in a fresh ``python -m reconrisk`` process."""
    work, afile, ro = _scratch(tmp_root)
    env = dict(os.environ, **_ENV)
    # the cases run in a scratch folder: make PYTHONPATH entries absolute so `PYTHONPATH=src` still applies
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "reconrisk", *_argv(case, work, afile, ro)], capture_output=True,
                           text=True, timeout=timeout, cwd=work, env=env, stdin=subprocess.DEVNULL)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", ""
    finally:
        os.chmod(ro, 0o700)
    return (case, *classify(case, rc, out, err, time.perf_counter() - t0, timeout))


def run_cases_fork(cases: list[Case], timeout: float, tmp_root: str, jobs: int):
    """Each case in its own forked child of a parent that imported reconrisk once (Linux).

    The child is a separate process (its crash, hang or memory blow-up cannot
    touch the harness): stdout/stderr go to files, the exit status is
    ``reconrisk._src.cli.main``'s return value, and a child still running after
    ``timeout`` is killed and counted as a hang. It saves the ~2 s interpreter
    and import start-up of every case, which matters on a loaded 2-core box.
    """
    from reconrisk._src.cli import main as cli_main

    pending = list(cases)
    running: dict[int, tuple] = {}
    while pending or running:
        while pending and len(running) < jobs:
            case = pending.pop(0)
            work, afile, ro = _scratch(tmp_root)
            argv = _argv(case, work, afile, ro)
            out_path, err_path = os.path.join(work, ".stdout"), os.path.join(work, ".stderr")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # child
                code = 1
                try:
                    os.chdir(work)
                    os.environ.update(_ENV)
                    fo = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    fe = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    os.dup2(fo, 1)
                    os.dup2(fe, 2)
                    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
                    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
                    import warnings

                    warnings.resetwarnings()
                    warnings.simplefilter("default")
                    code = cli_main(argv)
                    code = code if isinstance(code, int) else 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    code = 1
                finally:
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                    finally:
                        os._exit(code)
            running[pid] = (case, work, ro, out_path, err_path, time.perf_counter())
        time.sleep(0.02)
        for pid in list(running):
            case, work, ro, out_path, err_path, t0 = running[pid]
            done, status = os.waitpid(pid, os.WNOHANG)
            dt = time.perf_counter() - t0
            if done == 0 and dt < timeout:
                continue
            if done == 0:  # timed out: kill it
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                rc = None
            else:
                rc = os.waitstatus_to_exitcode(status)
                rc = 128 - rc if rc < 0 else rc  # killed by a signal: not 0 or 2
            del running[pid]
            os.chmod(ro, 0o700)
            read = lambda p: open(p, encoding="utf-8", errors="replace").read() if os.path.exists(p) else ""  # noqa: E731
            yield (case, *classify(case, rc, read(out_path), read(err_path), dt, timeout))


COLUMNS = ["tried", "clean error", "valid result", "tracebacks", "hangs", "multi-line exit-2", "silently accepted",
           "silently wrong"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--limit", type=int, default=0, help="run only the first N cases (0: all)")
    ap.add_argument("--only", default="", help="substring filter on case names")
    ap.add_argument("--skip", default="", help="leave out cases whose name contains this substring")
    ap.add_argument("--verbose", action="store_true", help="print every case's outcome")
    ap.add_argument("--exec", action="store_true",
                    help="start a fresh `python -m reconrisk` per case instead of forking a pre-imported parent")
    args = ap.parse_args()
    jobs = max(1, min(2, args.jobs))
    cases = [c for c in build_cases() if args.only in c.name and not (args.skip and args.skip in c.name)]
    if args.limit:
        cases = cases[: args.limit]
    counts: collections.Counter = collections.Counter()
    failures: list[tuple[str, str, str]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_root, cf.ThreadPoolExecutor(jobs) as pool:
        if args.exec:
            results = pool.map(lambda c: run_case_exec(c, args.timeout, tmp_root), cases)
        else:
            results = run_cases_fork(cases, args.timeout, tmp_root, jobs)
        for case, kind, detail in results:
            counts[kind] += 1
            if args.verbose:
                print(f"{kind:18s} {case.name}: {detail}", flush=True)
            if kind not in ("clean error", "valid result"):
                failures.append((kind, case.name, detail))
    elapsed = time.perf_counter() - t0
    key = {"tracebacks": "traceback", "hangs": "hang"}
    import reconrisk

    print(f"\nreconrisk CLI fuzz ({os.path.dirname(reconrisk.__file__)}): {len(cases)} cases, {jobs} at a time, timeout {args.timeout:g} s, "
          f"{elapsed:.0f} s wall, {'exec' if args.exec else 'fork'} mode")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    row = [len(cases)] + [counts[key.get(c, c)] for c in COLUMNS[1:]]
    print("| " + " | ".join(str(x) for x in row) + " |")
    for kind, name, detail in failures:
        print(f"  {kind}: {name}: {detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
