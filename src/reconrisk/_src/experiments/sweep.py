"""Sweeps of audit trials at scale: a TOML grid → hashed trials → chunks on a process pool or Dask → a SQLite store.

A sweep file (``examples/sweep.toml`` is one)::

    [sweep]
    name = "eps-grid"     # free text
    seed = 0              # the sweep seed; every trial's randomness derives from it
    trials = 200          # trials per grid point
    chunk = 50            # trials per task, vmapped together (default: by memory, at most 64)
    dataset = "digits"    # digits | mnist:PATH | cifar10:PATH (a relative PATH is read from the file's folder)

    [grid]                # a scalar is fixed, a list is a grid axis; the grid is their product
    epsilon = [1, 4, 10]  # or noise_multiplier = [...] (exactly one of the two); σ calibrated with the PLD accountant
    sample_rate = 1.0
    steps = 100
    clip_norm = 0.1
    prior_size = [10, 100]
    model = "mlp"         # also: known_size, learning_rate, clip_mode, prior, delta (as ``reconrisk audit``)

One trial is Hayes, Mahloujifar & Balle's (2023) informed-adversary game as ``reconrisk audit`` plays it
(:mod:`reconrisk._src.experiments.trials`): DP-SGD on D₋ ∪ {target} with the release of its grid point, then the
prior-aware attacks (Alg. 2, Alg. 3, log-likelihood, no deduction) scored on exact match.

Identity and randomness. A grid point's configuration (release, prior, model, dataset, sweep seed) is a
canonical JSON object; its sha256 is the point hash, and trial ``i`` of the point is that object plus
``"replicate": i``, whose sha256 is the trial hash (the store's key). The known set D₋ of a point is drawn from
``SeedSequence(seed, spawn_key=point hash)``; trial ``i``'s prior, target and JAX key from
``SeedSequence(seed, spawn_key=trial hash)``. A trial's numbers are therefore a function of its hash alone —
not of the scheduler, the number of workers, the order of completion, or which trials ran before a crash.
(Departure from ``reconrisk audit``, which draws one seed's priors and keys by trial index: the sweep hashes
instead, so that growing ``trials`` later keeps every stored trial valid.)

Execution. The trials of a point are cut into fixed chunks (replicates ``[j·chunk, (j+1)·chunk)``, the last
padded to the same shape), so each chunk is one vmapped call of the audit's compiled trial function and every
worker compiles once per shape. Chunks run on a local process pool (spawn context: JAX is not fork-safe), in
the driver (``pool=0``), or on Dask (``workers=N`` starts a local cluster of processes, ``scheduler=ADDR`` uses
an existing one); the driver writes each returned chunk to the store at once. A rerun skips every stored trial
and recomputes only chunks that still miss some — with the same shapes, hence the same numbers.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from .. import _validate as v
from ..analysis.privacy import PrivacyAnalysis
from ..audit.empirical import empirical_audit
from ..data import load_dataset, mean_pairwise_distance, uniform_noise_prior
from ..errors import ReconRiskError
from ..metrics import SuccessRate
from ..release import Release
from ..train.dpsgd import make_step_config, OVERFLOW_MESSAGE
from ..train.models import get_model
from .store import ResultStore
from .sweep_file import (  # noqa: F401  (re-exported: the sweep file)
    FORMAT, GRID_DEFAULTS, GRID_KEYS, MAX_CHUNK, MAX_TRIALS, SWEEP_KEYS, Point, Sweep, canonical_hash, load_sweep,
    parse_sweep, seed_sequence,
)
from .trials import _trial_functions, PRIOR_AWARE, split_dataset

ATTACK_COLUMNS = ("alg2", "alg3", "loglik", "no_deduction")
CONNECT_TIMEOUT = "20s"  # how long to try reaching a --scheduler
#: The padded batch size of Poisson sampling is chosen for this many trials (overflow probability < 1e-12 over
#: all of them), a constant so that a trial's compiled shape does not depend on how many trials its point has.
CAP_TRIALS = 10**6
_INVERSION = (300, 5, 0.01)  # AuditSetting's defaults: shares the audit's cache entry of the trial functions


# ----------------------------------------------------------------------------------------
# one chunk of trials (runs in a worker)
# ----------------------------------------------------------------------------------------
def configure_compile_cache(path: str | None) -> None:
    """Point JAX's persistent compilation cache at ``path`` (before the first compilation in this process).

    Workers of a pool or cluster then load the compiled trial function from disk instead of each compiling
    it again (tens of seconds each on a small machine).
    """
    if not path:
        return
    from .._jax import jax

    if jax.config.jax_compilation_cache_dir != str(path):
        jax.config.update("jax_compilation_cache_dir", str(path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@functools.lru_cache(maxsize=4)
def _dataset(spec: str):
    return load_dataset(spec)


@functools.lru_cache(maxsize=64)
def _point_data(point_json: str, dataset_path: str):
    """(dataset, model, step config, release, known x, known y, pool x, pool y, noise distance) of a point.

    Cached per process: the chunks of one point share D₋ (drawn from the point's seed sequence) and shapes.
    """

    p = json.loads(point_json)
    data = _dataset(dataset_path)
    model = get_model(p["model"], data.image_shape, data.num_classes)
    release = Release(p["noise_multiplier"], p["sample_rate"], p["steps"], p["clip_norm"])
    ss = seed_sequence(p["seed"], canonical_hash(p), 0)
    split_seed = int.from_bytes(ss.generate_state(4).tobytes(), "little")
    kx, ky, px, py = split_dataset(data, p["prior_size"], p["known_size"], split_seed)
    cfg = make_step_config(release, kx.shape[0] + 1, p["learning_rate"], p["clip_mode"], trials=CAP_TRIALS)
    dist = None
    if p["prior"] == "uniform":
        dist = mean_pairwise_distance(px, np.random.default_rng(seed_sequence(p["seed"], canonical_hash(p), 1)))
    return data, model, cfg, release, kx, ky, px, py, dist


def _trial_inputs(p: dict, trial_hash: str, data, px, py, dist):
    """(prior x, prior y, target, two key words) of one trial, from its own seed sequence."""
    rng = np.random.default_rng(seed_sequence(p["seed"], trial_hash, 0))
    n = p["prior_size"]
    if p["prior"] == "uniform":
        x = uniform_noise_prior(n, data.dim, rng, mean_distance=dist)
        y = rng.integers(0, data.num_classes, n).astype(np.int32)
    else:
        idx = rng.choice(px.shape[0], n, replace=False)
        x, y = px[idx], py[idx]
    target = int(rng.integers(0, n))
    words = seed_sequence(p["seed"], trial_hash, 1).generate_state(2, dtype=np.uint32)
    return x, y, target, words


def run_chunk(task: dict) -> list[dict]:
    """Run one chunk of trials of one point; returns one row per trial (the store's columns).

    ``task``: ``{"point": config, "dataset_path": str, "trials": [(trial_hash, replicate), …], "pad": int,
    "compile_cache": str | None}``. Plain data only, so it travels to any worker.
    """
    t0 = time.perf_counter()
    configure_compile_cache(task.get("compile_cache"))
    from .._jax import jax
    import jax.numpy as jnp

    p = task["point"]
    data, model, cfg, release, kx, ky, px, py, dist = _point_data(json.dumps(p, sort_keys=True), task["dataset_path"])
    ids = list(task["trials"])
    inputs = [_trial_inputs(p, h, data, px, py, dist) for h, _ in ids]
    inputs += [inputs[-1]] * (task["pad"] - len(inputs))  # same shape for every chunk of the point
    xs = jnp.asarray(np.stack([i[0] for i in inputs]).astype(np.float32))
    ys = jnp.asarray(np.stack([i[1] for i in inputs]).astype(np.int32))
    targets = jnp.asarray(np.array([i[2] for i in inputs], dtype=np.int32))
    words = np.stack([i[3] for i in inputs])
    keys = jax.vmap(lambda a, b: jax.random.fold_in(jax.random.PRNGKey(a), b))(
        jnp.asarray(words[:, 0]), jnp.asarray(words[:, 1]))
    pa_fn, _ = _trial_functions(model, cfg, release.steps, kx.shape[0], _INVERSION)
    ok, stats = pa_fn(jnp.float32(release.noise_multiplier), jnp.float32(release.noise_std),
                      jnp.asarray(kx), jnp.asarray(ky), keys, xs, ys, targets)
    ok = np.asarray(ok)[: len(ids)]
    stats = np.asarray(stats, dtype=np.float64)[: len(ids)]
    if stats[:, 3].any():
        raise ReconRiskError(OVERFLOW_MESSAGE)
    seconds = (time.perf_counter() - t0) / len(ids)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    cols = {name: j for j, name in enumerate(PRIOR_AWARE)}
    rows = []
    for k, (h, rep) in enumerate(ids):
        row = {"trial_hash": h, "point_hash": task["point_hash"], "replicate": int(rep)}
        row.update({f"success_{a}": int(ok[k, cols[a]]) for a in ATTACK_COLUMNS})
        row.update(norm_sum=float(stats[k, 0]), clipped=float(stats[k, 1]), members=float(stats[k, 2]),
                   seconds=seconds, worker=worker, finished=time.time())
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------------------
# the driver
# ----------------------------------------------------------------------------------------
@dataclass
class SweepRun:
    """What one ``run_sweep`` call did."""

    name: str
    store: str
    backend: str
    total: int
    skipped: int
    ran: int
    written: int
    seconds: float
    points: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def certify_point(p: dict) -> dict:
    """ε at δ (the target, else the release's PLD ε) and the certified ReRo bound (Hayes, Mahloujifar & Balle 2023, Cor. 4) of a point."""

    analysis = PrivacyAnalysis(Release(p["noise_multiplier"], p["sample_rate"], p["steps"], p["clip_norm"]))
    bound = analysis.rero(prior_size=p["prior_size"])
    eps = p["epsilon"] if p["epsilon"] is not None else analysis.epsilon(p["delta"]).upper
    return {"epsilon": float(eps), "kappa": 1.0 / p["prior_size"], "rero_method": bound.method,
            "rero_lower": float(bound.lower), "rero_upper": float(bound.upper)}


def pending_tasks(sweep: Sweep, done: set[str], compile_cache: str | None = None) -> list[dict]:
    """The chunks that still miss a trial, in grid order (a chunk is recomputed whole: same shapes, same numbers)."""
    tasks = []
    for pt in sweep.points:
        for ids in pt.chunks():
            if any(h not in done for h, _ in ids):
                tasks.append({"point": pt.config, "point_hash": pt.hash, "dataset_path": sweep.dataset_path,
                              "trials": ids, "pad": pt.chunk, "compile_cache": compile_cache})
    return tasks


def check_backend(pool: int | None, workers: int | None, scheduler: str | None) -> tuple[str, object]:
    """('pool', n) | ('inline', 0) | ('dask-local', n) | ('dask', address); at most one of the three given."""
    given = [n for n, x in (("--pool", pool), ("--workers", workers), ("--scheduler", scheduler)) if x is not None]
    if len(given) > 1:
        raise ReconRiskError(f"give at most one of --pool, --workers and --scheduler; found {' and '.join(given)}")
    if scheduler is not None:
        if not isinstance(scheduler, str) or "://" not in scheduler or not scheduler.split("://", 1)[1]:
            raise ReconRiskError(f"scheduler must be a Dask scheduler address such as tcp://HOST:PORT; found {scheduler!r}")
        return "dask", scheduler
    if workers is not None:
        return "dask-local", v.integer("workers", workers, minimum=1, maximum=1024)
    if pool is None:
        return "pool", max(1, min(os.cpu_count() or 1, 8))
    n = v.integer("pool", pool, minimum=0, maximum=1024)
    return ("inline", 0) if n == 0 else ("pool", n)


def run_sweep(sweep: Sweep, store_path, *, pool: int | None = None, workers: int | None = None,
              scheduler: str | None = None, compile_cache: str | None = None,
              progress: Callable[[int], None] | None = None, certify: bool = True) -> SweepRun:
    """Run every trial of ``sweep`` that ``store_path`` does not hold yet, writing each chunk as it returns.

    ``pool=N`` (default: the CPU count, at most 8) runs chunks on N spawned processes, ``pool=0`` in this
    process; ``workers=N`` starts a local Dask cluster of N worker processes; ``scheduler='tcp://HOST:PORT'``
    uses an existing Dask cluster (its workers need reconrisk installed). ``compile_cache``: a folder for JAX's
    persistent compilation cache shared by the workers. ``progress(n)`` is called with each chunk's new trials.
    """
    kind, arg = check_backend(pool, workers, scheduler)
    t0 = time.perf_counter()
    with ResultStore.open(store_path, create=True) as store:
        known = store.points()
        new_points = [pt for pt in sweep.points if (known.get(pt.hash) or {}).get("certificate") is None]
        if new_points:
            _dataset(sweep.dataset_path)  # a bad dataset fails here, before any worker starts
            for pt in new_points:
                _point_data(json.dumps(pt.config, sort_keys=True), sweep.dataset_path)  # model, split, sizes
            store.add_points([(pt.hash, pt.config, certify_point(pt.config) if certify else None)
                              for pt in new_points])
        done = store.done()
        tasks = pending_tasks(sweep, done, compile_cache)
        all_ids = {h for pt in sweep.points for ids in pt.chunks() for h, _ in ids}
        skipped = len(all_ids & done)
        written = 0
        for rows in _execute(tasks, kind, arg):
            new = store.add_trials(rows)
            written += new
            if progress is not None:
                progress(sum(1 for r in rows if r["trial_hash"] not in done))
        summary = summarize(store, {pt.hash for pt in sweep.points})
    backend = {"inline": "in-process", "pool": f"process pool ({arg})", "dask-local": f"local Dask cluster ({arg} workers)",
               "dask": f"Dask scheduler {arg}"}[kind]
    return SweepRun(sweep.name, str(store_path), backend, sweep.total_trials, skipped,
                    sum(len(t["trials"]) for t in tasks), written, time.perf_counter() - t0, summary)


def _execute(tasks: list[dict], kind: str, arg) -> Iterator[list[dict]]:
    """Yield each chunk's rows as it finishes, on the chosen backend."""
    if not tasks:
        return
    if kind == "inline":
        for t in tasks:
            yield run_chunk(t)
    elif kind == "pool":
        yield from _execute_pool(tasks, min(arg, len(tasks)))
    else:
        yield from _execute_dask(tasks, kind, arg)


def _execute_pool(tasks, n):
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ex = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"))
    try:
        # keep a few chunks per process in flight (not all): memory stays flat for huge sweeps
        queue, running = list(reversed(tasks)), set()
        while queue or running:
            while queue and len(running) < 4 * n:
                running.add(ex.submit(run_chunk, queue.pop()))
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                try:
                    rows = fut.result()
                except BrokenProcessPool:
                    raise ReconRiskError("pool: a worker process ended abruptly (killed, or out of memory); the "
                                         "finished trials are stored, rerun the same command to resume") from None
                yield rows
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _execute_dask(tasks, kind, arg):
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ReconRiskError("Dask execution needs dask[distributed]; install it with: pip install 'reconrisk[scale]'") from None
    cluster = None
    try:
        if kind == "dask-local":
            cluster = LocalCluster(n_workers=arg, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
        else:
            try:
                client = Client(arg, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as exc:
                raise ReconRiskError(f"scheduler must be a reachable Dask scheduler; cannot connect to {arg} ({exc})") from None
        try:
            futures = [client.submit(run_chunk, t, pure=False) for t in tasks]
            for fut in as_completed(futures):
                yield fut.result()
                fut.release()
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


# ----------------------------------------------------------------------------------------
# reading a store
# ----------------------------------------------------------------------------------------
def summarize(store: ResultStore, only: set[str] | None = None) -> list[dict]:
    """Per grid point: configuration, certificate, trials stored, each attack's success rate [95% CI] and
    (``empirical``) the ReRo and ε lower bounds its successes give (:func:`reconrisk._src.audit.empirical.empirical_audit`)."""

    points = store.points()
    by_point: dict[str, list[dict]] = {}
    for t in store.trials(run_columns=False):
        by_point.setdefault(t["point_hash"], []).append(t)
    out = []
    for h, p in points.items():
        if only is not None and h not in only:
            continue
        rows = by_point.get(h, [])
        c = p["config"]
        entry = {"point_hash": h, "config": c, "certificate": p["certificate"], "trials": len(rows),
                 "primary": "alg2" if c.get("sample_rate", 1.0) >= 1.0 else "alg3", "attacks": {}}
        if rows:
            entry["empirical"] = {}
            cert = p["certificate"] or {}
            for a in ATTACK_COLUMNS:
                rate = SuccessRate.from_outcomes([r[f"success_{a}"] for r in rows])
                entry["attacks"][a] = rate.to_dict()
                # what the successes refute, beside the certificate (audit/empirical.py)
                entry["empirical"][a] = empirical_audit(
                    rate.successes, rate.trials, kappa=1.0 / c["prior_size"], delta=c["delta"],
                    certified_rero=cert.get("rero_upper"), certified_epsilon=cert.get("epsilon")).to_dict()
        out.append(entry)
    out.sort(key=lambda e: [_order(e["config"].get(k)) for k in GRID_KEYS])
    return out


def _order(x) -> tuple:
    """Sort key of a config value: missing first, then numbers by value, then text."""
    if x is None:
        return (0, 0.0, "")
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return (1, float(x), "")
    return (2, 0.0, str(x))
