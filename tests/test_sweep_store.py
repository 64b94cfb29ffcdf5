"""The sweep results store (experiments/store.py): no duplicates, concurrent writers, clear refusals, export.

No JAX here: rows are synthetic, so these tests take a few seconds.
"""

import multiprocessing
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk._src.experiments.store import APPLICATION_ID, ResultStore


def _row(point: str, rep: int, ok: int = 1) -> dict:
    return {"trial_hash": f"{point}-{rep:06d}", "point_hash": point, "replicate": rep, "success_alg2": ok,
            "success_alg3": 1 - ok, "success_loglik": ok, "success_no_deduction": 0, "norm_sum": rep * 0.5,
            "clipped": 3.0, "members": 3.0, "seconds": 0.001, "worker": "test", "finished": 0.0}


def _writer(path: str, start: int, stop: int, barrier) -> None:
    """Open (creating if needed) and append rows [start, stop) in chunks of 7, one transaction each."""
    barrier.wait()
    with ResultStore.open(path, create=True) as s:
        s.add_points([("p", {"steps": 3}, None)])
        for lo in range(start, stop, 7):
            s.add_trials([_row("p", r) for r in range(lo, min(lo + 7, stop))])


def test_rows_are_unique_and_rerun_writes_nothing(tmp_path):
    path = tmp_path / "r.db"
    with ResultStore.open(path, create=True) as s:
        s.add_points([("p", {"noise_multiplier": 1.0}, {"kappa": 0.25, "rero_upper": 0.5})])
        assert s.add_trials([_row("p", i) for i in range(10)]) == 10
        assert s.add_trials([_row("p", i) for i in range(5, 15)]) == 5  # 5..9 already there
        assert s.count() == 15
        assert s.done({"p-000003", "nope"}) == {"p-000003"}
        assert s.integrity_check() == "ok"
        assert s._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with ResultStore.open(path) as s:  # reopen: same rows
        assert [t["replicate"] for t in s.trials()] == list(range(15))


def test_two_concurrent_writers_lose_nothing(tmp_path):
    """Two processes create and fill one store at the same moment (overlapping rows): every row once, file sound."""
    path = str(tmp_path / "c.db")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(path, 0, 400, barrier)),
             ctx.Process(target=_writer, args=(path, 200, 600, barrier))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with ResultStore.open(path) as s:
        reps = [t["replicate"] for t in s.trials()]
        assert reps == list(range(600))
        assert s.integrity_check() == "ok"


def test_export_csv_and_parquet_agree(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "e.db"
    with ResultStore.open(path, create=True) as s:
        s.add_points([("a", {"noise_multiplier": 1.0, "steps": 3}, {"epsilon": 2.0, "kappa": 0.1, "rero_lower": 0.2,
                                                                     "rero_upper": 0.3})])
        s.add_trials([_row("a", i, ok=i % 2) for i in (3, 1, 2, 0)])  # order of arrival does not matter
        s.export_csv(tmp_path / "t.csv")
        s.export_parquet(tmp_path / "t.parquet")
    lines = (tmp_path / "t.csv").read_text().splitlines()
    head = lines[0].split(",")
    assert len(lines) == 5 and head[:3] == ["trial_hash", "point_hash", "replicate"]
    assert {"noise_multiplier", "steps", "certified_epsilon", "rero_upper", "success_alg2"} <= set(head)
    table = pq.read_table(tmp_path / "t.parquet").to_pydict()
    assert table["replicate"] == [0, 1, 2, 3]
    assert table["success_alg2"] == [0, 1, 0, 1]
    assert table["rero_upper"] == [0.3] * 4
    csv_reps = [int(line.split(",")[2]) for line in lines[1:]]
    assert csv_reps == table["replicate"]


def _foreign_sqlite(p):
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE notes (x TEXT)")
    conn.commit()
    conn.close()


def _other_app_id(p):
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA application_id=1234")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.commit()
    conn.close()


def _newer_schema(p):
    with ResultStore.open(p, create=True):
        pass
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA user_version=99")
    conn.close()


def _damaged(p):
    with ResultStore.open(p, create=True) as s:
        s.add_trials([_row("p", i) for i in range(300)])
    data = bytearray(p.read_bytes())
    page = 4096
    for off in range(page, len(data), page):  # every page but the header page: garbage b-tree pages
        data[off:off + 64] = b"\xff" * 64
    p.write_bytes(bytes(data))


BAD = {
    "directory": (lambda p: p.mkdir(), "is a directory"),
    "empty": (lambda p: p.write_bytes(b""), "empty file"),
    "random bytes": (lambda p: p.write_bytes(bytes(range(256)) * 40), "not a SQLite file"),
    "text": (lambda p: p.write_text("epsilon,rate\n1,0.5\n"), "not a SQLite file"),
    "foreign sqlite": (_foreign_sqlite, "another application"),
    "other application id": (_other_app_id, "another application"),
    "newer schema": (_newer_schema, "schema version 99"),
    "damaged": (_damaged, "malformed|damaged|cannot be read"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_store_is_a_clear_error(tmp_path, kind, capsys):
    make, words = BAD[kind]
    p = tmp_path / "bad.db"
    make(p)
    with pytest.raises(ReconRiskError, match=words) as info:
        with ResultStore.open(p, create=True) as s:
            s.count()
            s.trials()
    assert str(p) in str(info.value)
    for argv in (["sweep", "status", "--store", str(p)], ["sweep", "export", "--store", str(p), "--csv", str(tmp_path / "o.csv")]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("reconrisk: error: store must be a reconrisk results store") and err.count("\n") == 1


def test_missing_store_and_export_without_target(tmp_path, capsys):
    assert main(["sweep", "status", "--store", str(tmp_path / "none.db")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with ResultStore.open(tmp_path / "ok.db", create=True):
        pass
    assert main(["sweep", "export", "--store", str(tmp_path / "ok.db")]) == 2
    assert "--csv FILE and/or --parquet FILE" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()  # status never creates a store


def test_new_store_marks_itself(tmp_path):
    p = tmp_path / "m.db"
    ResultStore.open(p, create=True).close()
    conn = sqlite3.connect(p)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert dict(conn.execute("SELECT key, value FROM meta"))["app"] == "reconrisk-sweep"
    conn.close()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.db"]  # no temporary left behind


@settings(max_examples=10)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=60))
def test_store_holds_each_trial_once_whatever_the_arrival(tmp_path_factory, reps):
    """Property: any sequence of (possibly repeated) chunk writes stores exactly the distinct trials, in order."""
    p = tmp_path_factory.mktemp("h") / "h.db"
    with ResultStore.open(p, create=True) as s:
        written = 0
        for lo in range(0, len(reps), 5):
            written += s.add_trials([_row("p", r) for r in reps[lo:lo + 5]])
        assert written == len(set(reps)) == s.count()
        assert [t["replicate"] for t in s.trials()] == sorted(set(reps))

