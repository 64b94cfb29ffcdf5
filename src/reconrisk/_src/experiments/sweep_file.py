"""The sweep file of :mod:`reconrisk._src.experiments.sweep`: a TOML grid read, validated and expanded into hashed points.

A grid point's configuration (release, prior, model, dataset, sweep seed) is a canonical JSON object; its
sha256 is the point hash, and trial ``i`` of the point is that object plus ``"replicate": i``, whose sha256
is the trial hash (:func:`canonical_hash`); every trial's randomness is :func:`seed_sequence` of the sweep
seed and a hash. The keys of the file, and why the sweep hashes, are in :mod:`reconrisk._src.experiments.sweep`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _validate as v
from ..analysis.calibrate import noise_multiplier_for_epsilon
from .._io import parse_text
from ..errors import ReconRiskError
from .trials import PRIOR_KINDS, trial_batch_size

FORMAT = "reconrisk-sweep/1"  # part of every hash: a new trial definition gets new hashes
SWEEP_KEYS = ("name", "seed", "trials", "chunk", "dataset")
GRID_KEYS = ("epsilon", "noise_multiplier", "sample_rate", "steps", "clip_norm", "prior_size", "known_size",
             "model", "learning_rate", "clip_mode", "prior", "delta")
GRID_DEFAULTS = {"sample_rate": 1.0, "steps": 100, "clip_norm": 0.1, "prior_size": 10, "known_size": None,
                 "model": "mlp", "learning_rate": 2.0, "clip_mode": "hard", "prior": "data", "delta": 1e-5}
MAX_TRIALS = 10**8
MAX_CHUNK = 4096


def canonical_hash(obj: dict) -> str:
    """sha256 (hex) of the canonical JSON of ``obj`` (sorted keys, no spaces, floats as Python's repr)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _words(hex_hash: str) -> tuple[int, ...]:
    return tuple(int(hex_hash[i:i + 8], 16) for i in range(0, 64, 8))


def seed_sequence(seed: int, hex_hash: str, *extra: int) -> np.random.SeedSequence:
    """``SeedSequence(seed, spawn_key=(words of the hash, *extra))``: the randomness of one point or trial."""
    return np.random.SeedSequence(seed, spawn_key=_words(hex_hash) + tuple(extra))


@dataclass(frozen=True)
class Point:
    """One grid point: its canonical configuration, hash and number of trials."""

    config: dict
    hash: str
    trials: int
    chunk: int

    def trial_hash(self, replicate: int) -> str:
        return canonical_hash({**self.config, "replicate": replicate})

    def chunks(self) -> list[list[tuple[str, int]]]:
        """The fixed chunks of (trial hash, replicate)."""
        ids = [(self.trial_hash(i), i) for i in range(self.trials)]
        return [ids[lo:lo + self.chunk] for lo in range(0, self.trials, self.chunk)]


@dataclass(frozen=True)
class Sweep:
    name: str
    seed: int
    dataset: str  # as written (hashed)
    dataset_path: str  # resolved for loading
    points: tuple[Point, ...]
    source: str = "<dict>"

    @property
    def total_trials(self) -> int:
        return sum(p.trials for p in self.points)


def load_sweep(path) -> Sweep:
    """Read and validate a sweep file (TOML); :mod:`reconrisk._src.experiments.sweep` lists its keys."""
    p = Path(path)
    if not p.is_file():
        raise ReconRiskError(f"sweep file must be an existing TOML file; found {str(path)!r}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReconRiskError(f"sweep file {p} must be valid TOML: {exc}") from None
    try:
        spec = parse_text(text, "toml", f"sweep file {p}")
    except ReconRiskError as exc:  # the wording sweep files always had
        raise ReconRiskError(str(exc).replace(" is not valid TOML", " must be valid TOML")) from None
    return parse_sweep(spec, source=str(p), base=p.parent)


def _scalar_or_list(key: str, value) -> list:
    vals = value if isinstance(value, list) else [value]
    if not vals:
        raise ReconRiskError(f"{key} must be a value or a non-empty list; found []")
    seen = []
    for x in vals:
        if isinstance(x, (list, dict)):
            raise ReconRiskError(f"{key} must hold numbers or strings; found {x!r}")
        if x in seen:
            raise ReconRiskError(f"{key} must not list a value twice; found {x!r} twice")
        seen.append(x)
    return vals


def _check_grid_value(key: str, x):
    name = f"grid.{key}"
    if key == "epsilon":
        return v.epsilon(name, x)
    if key == "noise_multiplier":
        return v.noise_multiplier(name, x)
    if key == "sample_rate":
        return v.sample_rate(name, x)
    if key == "steps":
        return v.integer(name, x, minimum=1, maximum=10**6)
    if key in ("clip_norm", "learning_rate"):
        return v.positive(name, x)
    if key == "prior_size":
        return v.integer(name, x, minimum=2, maximum=10**6)
    if key == "known_size":
        return v.integer(name, x, minimum=1, maximum=10**7)
    if key == "delta":
        return v.probability_open(name, x)
    if key == "model":
        if not isinstance(x, str) or not x:
            raise ReconRiskError(f"{name} must be a model name (mlp, mlp:W1,W2,..., cnn, logistic); found {x!r}")
        return x
    if key == "clip_mode":
        return v.choice(name, x, ("hard", "gelu"))
    if key == "prior":
        return v.choice(name, x, PRIOR_KINDS)
    raise AssertionError(key)  # pragma: no cover


def _resolve_dataset(spec: str, base: Path | None) -> str:
    kind, sep, rest = spec.partition(":")
    if sep and base is not None and rest and not Path(rest).is_absolute():
        return f"{kind}:{base / rest}"
    return spec


def parse_sweep(spec: dict, *, source: str = "<dict>", base: Path | None = None) -> Sweep:
    """Validate a parsed sweep (a dict as TOML gives it) and expand its grid into points.

    Unknown tables or keys are refused by name; every value is checked with the rules of the matching
    ``reconrisk audit`` flag. With ``epsilon``, σ is calibrated here (PLD accountant) and both go into the hash.
    """
    if not isinstance(spec, dict):
        raise ReconRiskError(f"sweep must be a table (dict); found {type(spec).__name__}")
    for table in spec:
        if table not in ("sweep", "grid"):
            raise ReconRiskError(f"unknown table {table!r} in {source}; valid tables: 'sweep', 'grid'")
    head = spec.get("sweep", {})
    grid = spec.get("grid")
    if not isinstance(head, dict) or not isinstance(grid, dict):
        raise ReconRiskError(f"{source} must have a [grid] table (and may have a [sweep] table)")
    for key in head:
        if key not in SWEEP_KEYS:
            raise ReconRiskError(f"unknown key 'sweep.{key}' in {source}; valid keys: {', '.join(SWEEP_KEYS)}")
    for key in grid:
        if key not in GRID_KEYS:
            raise ReconRiskError(f"unknown key 'grid.{key}' in {source}; valid keys: {', '.join(GRID_KEYS)}")
    name = head.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise ReconRiskError(f"sweep.name must be a string; found {name!r}")
    seed = v.seed("sweep.seed", head.get("seed", 0))
    trials = v.integer("sweep.trials", head.get("trials", 100), minimum=1, maximum=MAX_TRIALS)
    chunk = head.get("chunk")
    if chunk is not None:
        chunk = v.integer("sweep.chunk", chunk, minimum=1, maximum=MAX_CHUNK)
    dataset = head.get("dataset", "digits")
    if not isinstance(dataset, str) or not dataset:
        raise ReconRiskError(f"sweep.dataset must be digits, mnist:PATH or cifar10:PATH; found {dataset!r}")
    if ("epsilon" in grid) == ("noise_multiplier" in grid):
        raise ReconRiskError(f"grid must give exactly one of 'epsilon' and 'noise_multiplier' ({source}); "
                             f"found {'both' if 'epsilon' in grid else 'neither'}")

    noise_key = "epsilon" if "epsilon" in grid else "noise_multiplier"
    axes = {noise_key: _scalar_or_list(f"grid.{noise_key}", grid[noise_key])}
    for key in GRID_KEYS[2:]:
        vals = _scalar_or_list(f"grid.{key}", grid[key]) if key in grid else [GRID_DEFAULTS[key]]
        axes[key] = vals
    axes = {k: [x if x is None else _check_grid_value(k, x) for x in vals] for k, vals in axes.items()}
    n_points = math.prod(len(vals) for vals in axes.values())
    v.max_count("grid", n_points * trials, MAX_TRIALS, "trials in the sweep (points × sweep.trials)")

    points = []
    for combo in itertools.product(*axes.values()):
        cfg = dict(zip(axes, combo))
        if noise_key == "epsilon":
            cfg["noise_multiplier"] = float(noise_multiplier_for_epsilon(
                cfg["epsilon"], cfg["sample_rate"], cfg["steps"], cfg["delta"], "pld"))
        else:
            cfg["epsilon"] = None
        cfg.update(format=FORMAT, seed=seed, dataset=dataset, attack="prior_aware")
        cfg = {k: (float(x) if isinstance(x, float) else x) for k, x in cfg.items()}

        c = chunk or trial_batch_size(cfg["steps"], cfg["prior_size"], trials, cfg["known_size"] or 999, None)
        points.append(Point(cfg, canonical_hash(cfg), trials, min(c, trials)))
    return Sweep(name, seed, dataset, _resolve_dataset(dataset, base), tuple(points), source)
