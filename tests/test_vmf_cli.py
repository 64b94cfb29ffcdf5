"""CLI of seed 004: ``vmf epsilon|kappa`` and ``capacity vmf|gaussian`` (no JAX)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from reconrisk.cli import main

TABLE_I = ["--dim", "13700", "--sample-rate", "128/60000", "--compositions", "3", "--delta", "1/60000"]


def _json(capsys, args):
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_vmf_epsilon_json(capsys):
    out = _json(capsys, ["vmf", "epsilon", "--kappa", "200", *TABLE_I, "--approach", "2", "--interpolation", "paper"])
    assert out["epsilon"] == pytest.approx(10.9, abs=0.02)
    assert out["approach"] == "2" and out["compositions"] == 3


def test_vmf_concentration_json(capsys):
    out = _json(capsys, ["vmf", "concentration", "--epsilon", "10.9", *TABLE_I, "--approach", "2", "--interpolation", "paper"])
    assert out["concentration"] == pytest.approx(200, rel=0.01)
    assert out["epsilon"] <= 10.9


def test_capacity_json(capsys):
    assert _json(capsys, ["capacity", "vmf", "--concentration", "500", "--dim", "13700"])["log_capacity"] == pytest.approx(
        490.882, rel=1e-5)
    out = _json(capsys, ["capacity", "gaussian", "--sigma", "0.5", "--radius", "1", "--dim", "2"])
    assert out["log_capacity"] == pytest.approx(math.log(5.506628274631), rel=1e-10)


@pytest.mark.parametrize(
    "args,word",
    [(["vmf", "epsilon", "--kappa", "-3", *TABLE_I], "kappa"),
     (["vmf", "epsilon", "--kappa", "3", "--dim", "1", "--sample-rate", "0.1", "--compositions", "3",
       "--delta", "1e-5"], "dim"),
     (["vmf", "epsilon", "--kappa", "3", "--dim", "10", "--sample-rate", "a/b", "--compositions", "3",
       "--delta", "1e-5"], "sample_rate"),
     (["vmf", "epsilon", "--kappa", "3", *TABLE_I, "--approach", "7"], "approach"),
     (["capacity", "gaussian", "--sigma", "0", "--radius", "1", "--dim", "3"], "sigma"),
     (["capacity", "vmf", "--kappa", "nan", "--dim", "3"], "kappa")],
)
def test_bad_input_one_line_exit_2(capsys, args, word):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0]


def test_capacity_and_vmf_do_not_import_jax():
    code = ("import sys; from reconrisk.cli import main; main(['capacity','vmf','--kappa','3','--dim','3','--json']);"
            "main(['vmf','epsilon','--kappa','3','--dim','30','--sample-rate','0.1','--compositions','2','--delta','1e-5',"
            "'--json']); assert 'jax' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
