"""Sweep files (experiments/sweep.py): validation at the boundary, canonical hashes, seeds, fixed chunks.

No JAX: parsing calibrates σ (PLD accountant) but trains nothing.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk._src.experiments.sweep import (
    canonical_hash, check_backend, load_sweep, parse_sweep, pending_tasks, seed_sequence,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep.toml"


def _spec(**grid):
    base = {"noise_multiplier": [1.0, 2.0], "steps": 3, "prior_size": [4, 8], "known_size": 50}
    base.update(grid)
    return {"sweep": {"seed": 7, "trials": 20, "chunk": 8}, "grid": base}


def test_grid_expands_to_the_product_with_unique_hashes():
    sw = parse_sweep(_spec())
    assert len(sw.points) == 4 and sw.total_trials == 80
    assert {(p.config["noise_multiplier"], p.config["prior_size"]) for p in sw.points} == {
        (1.0, 4), (1.0, 8), (2.0, 4), (2.0, 8)}
    trial_hashes = [h for p in sw.points for ids in p.chunks() for h, _ in ids]
    assert len(set(trial_hashes)) == 80
    p = sw.points[0]
    assert p.hash == canonical_hash(p.config) and p.trial_hash(3) == canonical_hash({**p.config, "replicate": 3})
    assert [len(c) for c in p.chunks()] == [8, 8, 4]  # fixed boundaries, the last chunk short (padded when run)


def test_hash_depends_on_seed_and_values_not_on_order():
    a = parse_sweep(_spec())
    b = parse_sweep({"grid": dict(reversed(list(_spec()["grid"].items()))), "sweep": {"trials": 20, "chunk": 8, "seed": 7}})
    assert {p.hash for p in a.points} == {p.hash for p in b.points}
    c = parse_sweep({**_spec(), "sweep": {"seed": 8, "trials": 20, "chunk": 8}})
    assert not {p.hash for p in a.points} & {p.hash for p in c.points}
    # growing the number of trials keeps every existing trial's hash
    d = parse_sweep({**_spec(), "sweep": {"seed": 7, "trials": 30, "chunk": 8}})
    assert {p.trial_hash(5) for p in a.points} == {p.trial_hash(5) for p in d.points}
    # values are canonicalised before hashing: 1 and 1.0, 3 and 3.0 are the same configuration
    e = parse_sweep({**_spec(noise_multiplier=[1, 2], steps=3.0, prior_size=[4.0, 8]),
                     "sweep": {"trials": 20, "chunk": 8, "seed": 7}})
    assert {p.hash for p in a.points} == {p.hash for p in e.points}


@settings(max_examples=20)
@given(st.permutations([0.5, 1.0, 2.0, 4.0]), st.integers(0, 2**64))
def test_seeds_follow_the_hash_not_the_grid_order(order, seed):
    """Property: a trial's seed sequence is a function of (sweep seed, trial hash) only."""
    sw = parse_sweep({"sweep": {"seed": seed, "trials": 2}, "grid": {"noise_multiplier": list(order), "steps": 2}})
    by_sigma = {p.config["noise_multiplier"]: p for p in sw.points}
    ref = parse_sweep({"sweep": {"seed": seed, "trials": 2}, "grid": {"noise_multiplier": [0.5, 1.0, 2.0, 4.0], "steps": 2}})
    for p in ref.points:
        q = by_sigma[p.config["noise_multiplier"]]
        assert q.trial_hash(1) == p.trial_hash(1)
        a = seed_sequence(seed, q.trial_hash(1)).generate_state(4)
        assert np.array_equal(a, seed_sequence(seed, p.trial_hash(1)).generate_state(4))
    states = {tuple(seed_sequence(seed, p.trial_hash(i)).generate_state(2)) for p in sw.points for i in range(2)}
    assert len(states) == 8


def test_epsilon_grid_calibrates_sigma_into_the_config():
    sw = parse_sweep({"sweep": {"trials": 5}, "grid": {"epsilon": [1, 4], "steps": 10}})
    sig = [p.config["noise_multiplier"] for p in sw.points]
    assert sig[0] > sig[1] > 0 and [p.config["epsilon"] for p in sw.points] == [1.0, 4.0]


@pytest.mark.parametrize("spec, words", [
    ({"grid": {"noise_multiplier": 1.0, "stepz": 3}}, "unknown key 'grid.stepz'"),
    ({"sweep": {"trails": 3}, "grid": {"noise_multiplier": 1.0}}, "unknown key 'sweep.trails'"),
    ({"grid": {"noise_multiplier": 1.0}, "extra": {}}, "unknown table 'extra'"),
    ({"sweep": {}}, r"\[grid\] table"),
    ({"grid": {"steps": 3}}, r"exactly one of 'epsilon' and 'noise_multiplier' \(<dict>\); found neither"),
    ({"grid": {"epsilon": 1, "noise_multiplier": 1.0}}, "found both"),
    ({"grid": {"noise_multiplier": -1.0}}, r"grid.noise_multiplier must be .*found -1"),
    ({"grid": {"noise_multiplier": 1.0, "sample_rate": 1.5}}, r"grid.sample_rate must be in \(0, 1\]; found 1.5"),
    ({"grid": {"noise_multiplier": 1.0, "steps": 2.5}}, r"grid.steps must be an integer"),
    ({"grid": {"noise_multiplier": 1.0, "prior_size": 1}}, r"grid.prior_size must be"),
    ({"grid": {"noise_multiplier": 1.0, "prior": "gauss"}}, r"grid.prior must be one of"),
    ({"grid": {"noise_multiplier": [1.0, 1.0]}}, "must not list a value twice"),
    ({"grid": {"noise_multiplier": []}}, "non-empty list"),
    ({"grid": {"noise_multiplier": True}}, "grid.noise_multiplier must be"),
    ({"sweep": {"trials": 0}, "grid": {"noise_multiplier": 1.0}}, r"sweep.trials must be .*found 0"),
    ({"sweep": {"chunk": 10**6}, "grid": {"noise_multiplier": 1.0}}, r"sweep.chunk must be"),
    ({"sweep": {"seed": -1}, "grid": {"noise_multiplier": 1.0}}, r"sweep.seed must be"),
    ({"sweep": {"trials": 10**7}, "grid": {"noise_multiplier": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]}},
     "trials in the sweep"),
])
def test_bad_sweep_names_key_and_value(spec, words):
    with pytest.raises(ReconRiskError, match=words):
        parse_sweep(spec)


def test_sweep_file_errors_are_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[grid]\nnoise_multiplier = [1.0,\n")
    for path, words in ((bad, "must be valid TOML"), (tmp_path / "none.toml", "existing TOML file")):
        assert main(["sweep", "run", str(path), "--store", str(tmp_path / "s.db")]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
    bad.write_text("[grid]\nnoise_multiplier = 1.0\nclip = 2\n")
    assert main(["sweep", "run", str(bad), "--store", str(tmp_path / "s.db")]) == 2
    assert "unknown key 'grid.clip'" in capsys.readouterr().err
    assert main(["sweep", "run", str(EXAMPLE), "--store", str(tmp_path / "s.db"), "--pool", "1",
                 "--scheduler", "tcp://x:1"]) == 2
    assert "at most one of --pool, --workers and --scheduler" in capsys.readouterr().err
    assert not (tmp_path / "s.db").exists()  # nothing was created for a refused command


def test_example_sweep_parses():
    sw = load_sweep(EXAMPLE)
    assert len(sw.points) == 4 and sw.total_trials == 1000
    assert [p.config["epsilon"] for p in sw.points] == [1.0, 4.0, 10.0, 32.0]


def test_relative_dataset_path_is_read_from_the_sweep_folder(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[sweep]\ndataset = "mnist:data"\n[grid]\nnoise_multiplier = 1.0\n')
    sw = load_sweep(f)
    assert sw.dataset == "mnist:data" and sw.dataset_path == f"mnist:{tmp_path / 'data'}"
    assert sw.points[0].config["dataset"] == "mnist:data"  # the hash does not depend on where the file lies


def test_pending_tasks_recompute_only_incomplete_chunks():
    sw = parse_sweep(_spec())
    p = sw.points[0]
    chunks = p.chunks()
    done = {h for h, _ in chunks[0]} | {chunks[1][0][0]}  # chunk 0 complete, chunk 1 partly
    tasks = [t for t in pending_tasks(sw, done) if t["point_hash"] == p.hash]
    assert [t["trials"] for t in tasks] == chunks[1:] and all(t["pad"] == 8 for t in tasks)
    assert len(pending_tasks(sw, set())) == 12


@pytest.mark.parametrize("args, words", [
    ((None, None, "localhost:8786"), "tcp://HOST:PORT"),
    ((-1, None, None), "pool must be"),
    ((None, 0, None), "workers must be"),
])
def test_backend_choice_is_validated(args, words):
    with pytest.raises(ReconRiskError, match=words):
        check_backend(*args)
    assert check_backend(0, None, None) == ("inline", 0)
    assert check_backend(None, 2, None) == ("dask-local", 2)
    assert check_backend(None, None, "tcp://h:1") == ("dask", "tcp://h:1")


def test_unreachable_scheduler_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    import reconrisk._src.experiments.sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "CONNECT_TIMEOUT", "1s")
    f = tmp_path / "s.toml"
    f.write_text("[sweep]\ntrials = 2\n[grid]\nnoise_multiplier = 1.0\nsteps = 2\nprior_size = 4\nknown_size = 20\n")
    assert main(["sweep", "run", str(f), "--store", str(tmp_path / "s.db"), "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("reconrisk: error: scheduler must be a reachable Dask scheduler") and err.count("\n") == 1


@pytest.mark.parametrize("prior", ["data", "uniform"])
def test_trial_inputs_are_a_function_of_the_trial_hash(prior):
    from reconrisk._src.experiments.sweep import _trial_inputs

    class Data:
        dim, num_classes = 6, 3

    rng = np.random.default_rng(0)
    px, py = rng.random((30, 6)).astype(np.float32), rng.integers(0, 3, 30).astype(np.int32)
    p = {"seed": 5, "prior_size": 4, "prior": prior}
    a = _trial_inputs(p, "ab" * 32, Data, px, py, 1.0)
    b = _trial_inputs(p, "ab" * 32, Data, px, py, 1.0)
    c = _trial_inputs(p, "cd" * 32, Data, px, py, 1.0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0]) and not np.array_equal(a[3], c[3])
    assert a[0].shape == (4, 6) and a[1].shape == (4,) and 0 <= a[2] < 4 and a[3].dtype == np.uint32
    if prior == "data":  # candidates are distinct rows of the pool
        assert len({tuple(r) for r in a[0]}) == 4 and all(any(np.array_equal(r, q) for q in px) for r in a[0])
    else:
        assert ((a[0] >= 0) & (a[0] <= 1)).all()
    assert not np.array_equal(_trial_inputs({**p, "seed": 6}, "ab" * 32, Data, px, py, 1.0)[3], a[3])
