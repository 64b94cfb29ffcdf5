"""The results store of a sweep: one SQLite file, one row per finished trial, safe under crashes and concurrency.

Layout (schema version :data:`SCHEMA_VERSION`)::

    PRAGMA application_id = 0x52435357 ('RCSW')   PRAGMA user_version = 1
    meta(key TEXT PRIMARY KEY, value TEXT)           app = 'reconrisk-sweep', schema = '1', created = ISO time
    points(point_hash TEXT PRIMARY KEY, config TEXT, certificate TEXT)   one per grid point, config as JSON
    trials(trial_hash TEXT PRIMARY KEY, point_hash, replicate, <result columns>, seconds, worker, finished)

Guarantees:

* **no duplicates** — a trial is keyed by the sha256 of its canonical configuration and inserted with
  ``INSERT OR IGNORE``; a rerun, or two runners on the same sweep, never store a trial twice;
* **crash safety** — WAL journal, one short ``BEGIN IMMEDIATE`` transaction per finished chunk, written by the
  driver as the chunk returns; a SIGKILL loses at most the chunks in flight, which the rerun recomputes;
* **concurrent writers** — every connection sets ``busy_timeout``, so two processes appending to one store wait
  for each other's (millisecond) transactions instead of failing or corrupting the file;
* **clear refusals** — a directory, an empty file, random bytes, another application's SQLite database, a newer
  schema or a damaged file raise :class:`~reconrisk.errors.ReconRiskError` naming the path, never a raw
  ``sqlite3`` traceback. A new store is built in a temporary file and linked into place, so a crash while
  creating it never leaves a half-made (empty) store behind.

Export: :meth:`ResultStore.export_csv` and :meth:`ResultStore.export_parquet` (pyarrow, the ``scale`` extra)
write one row per trial with the point's configuration spread into columns, ordered by (point, replicate), so
two stores holding the same trials export identical tables whatever order the trials finished in.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from .._io import atomic_path, atomic_write
from ..errors import ReconRiskError

APPLICATION_ID = 0x52435357  # 'RCSW'
APP_NAME = "reconrisk-sweep"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000
_SQLITE_MAGIC = b"SQLite format 3\x00"

#: Per-trial result columns (name, SQL type), in export order after the configuration columns.
RESULT_COLUMNS = (
    ("success_alg2", "INTEGER"),
    ("success_alg3", "INTEGER"),
    ("success_loglik", "INTEGER"),
    ("success_no_deduction", "INTEGER"),
    ("norm_sum", "REAL"),
    ("clipped", "REAL"),
    ("members", "REAL"),
)
#: Columns that record how a trial ran (time, machine), not what it computed.
RUN_COLUMNS = (("seconds", "REAL"), ("worker", "TEXT"), ("finished", "REAL"))

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE points (point_hash TEXT PRIMARY KEY, config TEXT NOT NULL, certificate TEXT);
CREATE TABLE trials (
    trial_hash TEXT PRIMARY KEY,
    point_hash TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    {", ".join(f"{n} {t}" for n, t in RESULT_COLUMNS + RUN_COLUMNS)}
);
CREATE INDEX trials_point ON trials (point_hash, replicate);
"""


def _fail(path: Path, what: str) -> ReconRiskError:
    return ReconRiskError(f"store must be a reconrisk results store (SQLite); {path} {what}")


def _check_file(path: Path) -> None:
    """Refuse what is plainly not a store before SQLite sees it (directory, empty file, foreign bytes)."""
    if path.is_dir():
        raise _fail(path, "is a directory")
    if not path.is_file():
        raise _fail(path, "is not a regular file")
    size = path.stat().st_size
    if size == 0:
        raise _fail(path, "is an empty file (0 bytes); remove it or choose another path")
    with open(path, "rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    if head != _SQLITE_MAGIC:
        raise _fail(path, f"is not a SQLite file (its first bytes are {head[:8]!r})")


class ResultStore:
    """One results store; open with :meth:`open` (``with ResultStore.open(path) as s: ...``)."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path, *, create: bool = False) -> "ResultStore":
        """Open the store at ``path``; with ``create`` make a new one if nothing is there.

        Raises :class:`ReconRiskError` for a missing store (without ``create``) and for anything at ``path``
        that is not a reconrisk store of a schema this version reads.
        """
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise ReconRiskError(f"store must be a file path; found {path!r}")
        path = Path(path)
        if not path.exists():
            if not create:
                raise ReconRiskError(f"store must be an existing results store; {path} does not exist")
            _create(path)
        _check_file(path)
        conn = _connect(path)
        store = cls(path, conn)
        try:
            store._check_identity()
        except BaseException:
            conn.close()
            raise
        return store

    def _check_identity(self) -> None:
        with self._errors():
            app = self._conn.execute("PRAGMA application_id").fetchone()[0]
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if app != APPLICATION_ID:
                raise _fail(self.path, f"is a SQLite database of another application (application_id={app})")
            if version > SCHEMA_VERSION:
                raise _fail(self.path, f"has schema version {version}; this reconrisk reads up to {SCHEMA_VERSION}")
            names = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            meta = dict(self._conn.execute("SELECT key, value FROM meta")) if "meta" in names else {}
            if meta.get("app") != APP_NAME or not {"points", "trials"} <= names:
                raise _fail(self.path, "has reconrisk's application id but not its tables (damaged)")
            check = self._conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise _fail(self.path, f"is damaged (SQLite quick_check: {check})")
            # WAL is set when the store is created and persists in the file: opening writes nothing, so
            # status and export also work on a read-only copy

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn SQLite's errors on this file into one-line ReconRiskErrors naming it."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise _fail(self.path, f"cannot be read ({exc})") from None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------
    def add_points(self, points: Iterable[tuple[str, dict, dict | None]]) -> None:
        """Record grid points ``(point_hash, config, certificate or None)``; existing ones are kept."""
        rows = [(h, json.dumps(c, sort_keys=True), None if cert is None else json.dumps(cert, sort_keys=True))
                for h, c, cert in points]
        with self._transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO points VALUES (?, ?, ?)", rows)
            conn.executemany("UPDATE points SET certificate = ? WHERE point_hash = ? AND certificate IS NULL",
                             [(cert, h) for h, _, cert in rows if cert is not None])

    def add_trials(self, rows: list[dict]) -> int:
        """Insert finished trials (dicts with ``trial_hash``, ``point_hash``, ``replicate`` and the result and run
        columns) in one short transaction; trials already stored are ignored. Returns how many were new."""
        names = ["trial_hash", "point_hash", "replicate"] + [n for n, _ in RESULT_COLUMNS + RUN_COLUMNS]
        values = [tuple(r[n] for n in names) for r in rows]
        sql = f"INSERT OR IGNORE INTO trials ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        with self._transaction() as conn:
            before = conn.total_changes
            conn.executemany(sql, values)
            return conn.total_changes - before

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._errors():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # -- reading -------------------------------------------------------------------------
    def done(self, hashes: Iterable[str] | None = None) -> set[str]:
        """The trial hashes already stored (restricted to ``hashes`` when given)."""
        with self._errors():
            stored = {r[0] for r in self._conn.execute("SELECT trial_hash FROM trials")}
        return stored if hashes is None else stored & set(hashes)

    def count(self) -> int:
        with self._errors():
            return self._conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]

    def points(self) -> dict[str, dict]:
        """{point_hash: {"config": …, "certificate": … or None}}."""
        with self._errors():
            rows = self._conn.execute("SELECT point_hash, config, certificate FROM points").fetchall()
        return {h: {"config": json.loads(c), "certificate": None if cert is None else json.loads(cert)}
                for h, c, cert in rows}

    def trials(self, *, run_columns: bool = True) -> list[dict]:
        """Every stored trial as a dict, ordered by (point_hash, replicate)."""
        names = ["trial_hash", "point_hash", "replicate"] + [n for n, _ in RESULT_COLUMNS]
        if run_columns:
            names += [n for n, _ in RUN_COLUMNS]
        with self._errors():
            cur = self._conn.execute(f"SELECT {', '.join(names)} FROM trials ORDER BY point_hash, replicate")
            return [dict(zip(names, r)) for r in cur]

    def integrity_check(self) -> str:
        """SQLite's full ``PRAGMA integrity_check`` ('ok' when the file is sound)."""
        with self._errors():
            return "; ".join(r[0] for r in self._conn.execute("PRAGMA integrity_check"))

    # -- export --------------------------------------------------------------------------
    def table(self, *, run_columns: bool = True) -> tuple[list[str], list[list]]:
        """(column names, rows): one row per trial, the point's configuration spread into columns."""
        points = self.points()
        trials = self.trials(run_columns=run_columns)
        config_keys = sorted({k for p in points.values() for k in p["config"]})
        cert_keys = ["epsilon", "kappa", "rero_lower", "rero_upper"]  # the certificate's ε: "certified_epsilon"
        head = ["trial_hash", "point_hash", "replicate"]
        rest = [n for n in trials[0] if n not in head] if trials else [n for n, _ in RESULT_COLUMNS]
        columns = head + config_keys + ["certified_epsilon"] + cert_keys[1:] + rest
        rows = []
        for t in trials:
            p = points.get(t["point_hash"], {"config": {}, "certificate": None})
            cert = p["certificate"] or {}
            rows.append([t[h] for h in head] + [p["config"].get(k) for k in config_keys]
                        + [cert.get(k) for k in cert_keys] + [t[n] for n in rest])
        return columns, rows

    def export_csv(self, path, *, run_columns: bool = True) -> Path:
        """Write the trials as CSV (atomically); returns the path."""

        columns, rows = self.table(run_columns=run_columns)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow(["" if x is None else repr(x) if isinstance(x, float) else x for x in r])
        return atomic_write(path, buf.getvalue())

    def export_parquet(self, path, *, run_columns: bool = True) -> Path:
        """Write the trials as Parquet (needs pyarrow, the ``scale`` extra); returns the path."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ReconRiskError("Parquet export needs pyarrow; install it with: pip install 'reconrisk[scale]'") from None

        columns, rows = self.table(run_columns=run_columns)
        data = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
        for c, vals in data.items():  # mixed JSON values (e.g. null or list) as text
            if any(isinstance(x, (list, dict)) for x in vals):
                data[c] = [None if x is None else json.dumps(x) for x in vals]
        with atomic_path(path) as tmp:
            pq.write_table(pa.table(data), tmp)
        return Path(path)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across process crashes
    except sqlite3.DatabaseError as exc:
        raise _fail(path, f"cannot be opened ({exc})") from None
    return conn


def _create(path: Path) -> None:
    """Build an empty store in a temporary file and link it into place (atomic; a racing creator wins, we open it)."""
    if not path.parent.is_dir():
        raise ReconRiskError(f"store must be in an existing folder; {path.parent} is not a folder")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.executescript(_SCHEMA)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("app", APP_NAME), ("schema", str(SCHEMA_VERSION)),
                ("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
            ])
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it first: use theirs
        except OSError:  # no hard links on this file system
            if not path.exists():
                os.replace(tmp, path)
    except OSError as exc:
        raise ReconRiskError(f"store must be writable; cannot create {path} ({exc.strerror or exc})") from None
    finally:
        for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            try:
                p.unlink()
            except OSError:
                pass
