"""Deprecation warnings point at the user's line (issue 40, item 8).

Each kind of deprecated path — an old import path (``import``, ``from … import``), a renamed function, a renamed
keyword, a renamed result attribute, the CLI spelling of a measure in Python — is exercised by a tiny script run
in a fresh interpreter with ``-W always::DeprecationWarning``; the warning must be reported at the script's own
line (``script.py:N: DeprecationWarning``), never inside reconrisk or at ``sys:1``. In-process, the same is
checked through ``warnings.catch_warnings`` (filename and line of every record).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (kind, setup lines, the one deprecated line)
CASES = [
    ("import of a moved module", "", "import reconrisk.bounds.fano"),
    ("from-import of a moved module", "", "from reconrisk.bounds import conversions"),
    ("from a moved module import a name", "", "from reconrisk.bounds.fano import fano_bound"),
    ("renamed function", "import reconrisk as rr", "rr.rero_gamma_psnr(10.0, 0.5, 8, min_norm=1.0)"),
    ("renamed keyword", "from reconrisk._src.measures import conversions as C",
     "C.dp_from_two_point_rero(0.6, gamma=0.7)"),
    ("renamed attribute", "from reconrisk._src.theory import analytic as A\n"
                          "b = A.analytic_bound('mse', 0.5, 8, eta=0.1, min_norm=1.0, clip_norm=0.8)",
     "b.rero_clip"),
    ("CLI spelling of a measure", "from reconrisk._src.measures.risk import canonical_measure",
     "canonical_measure('membership-advantage')"),
]


def _script(setup: str, line: str) -> tuple[str, int]:
    text = "import warnings\n" + (setup + "\n" if setup else "") + line + "\n"
    return text, text.count("\n")


@pytest.mark.parametrize("kind,setup,line", CASES, ids=[c[0] for c in CASES])
def test_a_plain_script_is_told_at_its_own_line(tmp_path, kind, setup, line):
    text, lineno = _script(setup, line)
    script = tmp_path / "user_script.py"
    script.write_text(text, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ours = [ln for ln in proc.stderr.splitlines() if "DeprecationWarning" in ln and "deprecat" in ln.lower()
            or "moved to" in ln]
    assert ours, f"{kind}: no deprecation warning printed:\n{proc.stderr}"
    assert all(ln.startswith(f"{script}:{lineno}: DeprecationWarning") for ln in ours), \
        f"{kind}: warning not attributed to {script.name}:{lineno}:\n{proc.stderr}"


def test_under_the_default_filters_a_script_sees_an_old_import(tmp_path):
    """Python shows a DeprecationWarning by default only when it is attributed to ``__main__``: the point."""
    script = tmp_path / "main.py"
    script.write_text("import reconrisk.bounds.mse\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["PYTHONPATH"] = str(ROOT / "src")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and f"{script}:1: DeprecationWarning: reconrisk.bounds.mse moved to" in proc.stderr, \
        proc.stderr


def test_in_process_records_carry_the_callers_file_and_line():
    from reconrisk._src.measures import conversions as C
    from reconrisk._src.measures.risk import canonical_measure

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        here = sys._getframe().f_lineno + 1
        C.dp_from_two_point_rero(0.6, gamma=0.7)
        canonical_measure("membership-advantage")
    dep = [w for w in got if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 2
    assert [(Path(w.filename).name, w.lineno) for w in dep] == [(Path(__file__).name, here), (Path(__file__).name, here + 1)]
