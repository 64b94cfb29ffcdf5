"""``reconrisk audit``: one-line errors with exit 2, JSON/plot output, determinism."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from reconrisk._src.cli import main

pytest.importorskip("jax")

# The CLI's flags, files and determinism do not depend on the model: logistic regression (one dense layer, the
# MLP's code path) compiles each trial program here in ~40 % less CPU than the MLP (MNIST-shaped: 6.9 s vs 11.6 s).
# The default MLP goes through ``reconrisk audit`` in test_report's attack test.
SMALL = ["--steps", "15", "--trials", "12", "--known-size", "100", "--prior-size", "5", "--model", "logistic"]


def run(capsys, args):
    code = main(["audit", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--dataset", "imagenet"], "dataset must be one of"),
        (["--dataset", "mnist:/no/such/dir"], "does not exist"),
        (["--epsilon", "0"], "epsilon must be > 0"),
        (["--epsilon", "-2"], "epsilon must be > 0"),
        (["--prior-size", "5000"], "prior_size must be in"),
        (["--prior-size", "1"], "prior_size"),
        (["--sample-rate", "1.5"], "sample_rate must be in"),
        (["--attack", "magic"], "attack must be one of"),
        (["--epsilon", "4", "--noise-multiplier", "3"], "not both"),
        (["--known-size", "1790"], "known_size + prior_size"),
        (["--model", "resnet"], "model must be one of"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, args, needle):
    code, out, err = run(capsys, args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("reconrisk: error:")


def test_malformed_idx_and_missing_file(capsys, tmp_path):
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03\x00\x00\x00\x02")
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x02\x01\x02")
    code, _, err = run(capsys, ["--dataset", f"mnist:{tmp_path}"])
    assert code == 2 and "truncated" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "train-labels-idx1-ubyte").unlink()
    code, _, err = run(capsys, ["--dataset", f"mnist:{tmp_path}"])
    assert code == 2 and "no file named" in err


def test_audit_json_and_files(capsys, tmp_path):
    out_dir = tmp_path / "o"
    code, out, err = run(capsys, [*SMALL, "-e", "2", "-e", "30", "--json", "--out", str(out_dir),
                                  "--attack", "alg2", "--attack", "no-deduction"])
    assert code == 0, err
    doc = json.loads(out)
    assert json.loads((out_dir / "results.json").read_text()) == doc
    assert (out_dir / "audit.png").stat().st_size > 1000 and (out_dir / "audit.svg").stat().st_size > 1000
    assert [r["epsilon"] for r in doc["results"]] == [2.0, 30.0]
    for r in doc["results"]:
        assert r["neighbouring"] == "add_remove"  # Poisson/full batches: every ε here is add/remove
        assert set(r["attack"]) == {"successes", "trials", "rate", "ci_low", "ci_high"}
        assert r["attack"]["trials"] == 12 and 0 <= r["attack"]["ci_low"] <= r["attack"]["rate"] <= r["attack"]["ci_high"]
        assert 0 < r["rero"]["lower"] <= r["rero"]["upper"] <= 1 and r["noise_multiplier"] > 0
        assert r["release"]["noise_multiplier"] == r["noise_multiplier"] and "rero_upper" not in r
        assert set(r["attacks"]) == {"alg2", "no_deduction"}
        # issue 27: the empirical lower ends beside the certified upper ones, for every attack
        assert set(r["empirical_attacks"]) == {"alg2", "no_deduction"} and r["empirical"] == r["empirical_attacks"]["alg2"]
        emp = r["empirical"]
        assert emp["rero"]["quantity"] == "reconstruction" and emp["rero"]["method"] == "clopper_pearson"
        assert emp["rero"]["upper"] is None and emp["epsilon"]["upper"] is None
        assert 0 <= emp["rero"]["lower"] <= r["attack"]["rate"] and emp["rero"]["successes"] == r["attack"]["successes"]
        assert emp["rero"]["lower"] >= r["attack"]["ci_low"]  # one-sided 95 % lies above the two-sided 95 % end
        assert emp["consistent"] is (emp["rero"]["lower"] <= r["rero"]["upper"])
        assert emp["consistent"], "the empirical ReRo lower bound exceeds the certified upper bound"
        assert 0 <= emp["epsilon"]["lower"] <= emp["epsilon"]["max_possible"] and emp["epsilon"]["delta"] == r["delta"]
        assert emp["epsilon"]["ratio_to_certified"] == pytest.approx(emp["epsilon"]["lower"] / r["epsilon"])
    assert doc["results"][0]["noise_multiplier"] > doc["results"][1]["noise_multiplier"]


def test_same_seed_same_numbers(capsys, tmp_path):
    args = [*SMALL, "--noise-multiplier", "2", "--json", "--sample-rate", "0.5", "--no-plot", "--out", str(tmp_path)]
    docs = []
    for seed in ("3", "3", "4"):
        code, out, err = run(capsys, [*args, "--seed", seed])
        assert code == 0, err
        doc = json.loads(out)
        for r in doc["results"]:
            r.pop("seconds")
        doc["config"].pop("seconds")
        docs.append(doc)
    assert docs[0] == docs[1]
    a, c = docs[0]["results"][0], docs[2]["results"][0]
    assert (a["attacks"], a["mean_grad_norm"]) != (c["attacks"], c["mean_grad_norm"])


def test_table_output(capsys, tmp_path):
    code, out, err = run(capsys, [*SMALL, "-e", "8", "--out", str(tmp_path), "--no-plot"])
    assert code == 0, err
    assert "ReRo bound" in out and "alg2" in out and "results.json" in out
    assert "ReRo ≥" in out and "ε ≥" in out and "can show at most ε ≥" in out
    assert "add/remove ε" in " ".join(out.split())  # the caption names the relation of the ε it refutes
    # the certified bound is reported before the trials, each result as it finishes
    lines = err.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("certified: ε=8"))
    done = next(i for i, line in enumerate(lines) if line.startswith("done: ε=8"))
    assert first < done


def test_fixed_batches_name_replace_one(capsys, tmp_path):
    """Fixed-size batches are analysed under replace-one: the caption and the JSON say so."""
    code, out, err = run(capsys, [*SMALL, "--trials", "4", "-e", "8", "--batch-size", "50", "--out", str(tmp_path),
                                  "--no-plot"])
    assert code == 0, err
    assert "replace-one ε" in " ".join(out.split()) and "add/remove" not in out
    assert json.loads((tmp_path / "results.json").read_text())["results"][0]["neighbouring"] == "replace_one"


def test_uniform_prior_and_gradient_inversion(capsys, tmp_path):
    code, out, err = run(capsys, [*SMALL, "--trials", "4", "--noise-multiplier", "1", "--prior", "uniform",
                                  "--attack", "gradient-inversion", "--json", "--no-plot", "--out", str(tmp_path)])
    assert code == 0, err
    r = json.loads(out)["results"][0]
    assert r["attack"]["trials"] == 4 and r["gradient_inversion_mse"]["mean"] > 0


def test_cli_does_not_import_jax():
    code = (
        "import sys; from reconrisk._src.cli import app; import reconrisk._src.cli.audit; "
        "assert 'jax' not in sys.modules and 'matplotlib' not in sys.modules, 'heavy import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_mnist_and_cifar_audits(capsys, tmp_path):
    """The readers feed the audit end to end (tiny synthetic files in the real formats)."""
    import pickle
    import struct

    rng = np.random.default_rng(0)
    n = 40
    imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labs = rng.integers(0, 10, n, dtype=np.uint8)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 3]) + struct.pack(">III", n, 28, 28) + imgs.tobytes())
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", n) + labs.tobytes())
    cdir = tmp_path / "cifar"
    cdir.mkdir()
    batch = {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "labels": [int(c) for c in rng.integers(0, 10, n)]}
    (cdir / "data_batch_1").write_bytes(pickle.dumps(batch, protocol=2))
    for spec in (f"mnist:{tmp_path}", f"cifar10:{cdir}"):
        code, out, err = run(capsys, ["--dataset", spec, "--steps", "3", "--trials", "3", "--prior-size", "4",
                                      "--noise-multiplier", "5", "--model", "logistic", "--json", "--no-plot",
                                      "--out", str(tmp_path / "o")])
        assert code == 0, err
        doc = json.loads(out)
        assert doc["results"][0]["known_size"] == n - 4
