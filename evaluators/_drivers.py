"""An example custom output driver: every run appended to a SQLite database.

Register it in ``evaluation.py``::

    from evaluators._drivers import SqliteOutput

    output = [ConsoleOutput, SqliteOutput(".agenteval/results.sqlite")]

Then query the history with any SQLite client, e.g. the success rate of each evaluator over
the last runs::

    SELECT r.started_at, e.name, e.success_rate
    FROM evaluators e JOIN runs r USING (run_id)
    ORDER BY r.started_at DESC LIMIT 20;

It uses only the standard library's :mod:`sqlite3` and the public driver hooks, and opens
the database only for the length of each write, so no connection outlives a hook.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from agenteval import EvaluatorSummary, RunSummary
from agenteval.outputs import OutputDriver, RunInfo

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    duration_s REAL,
    exit_code INTEGER,
    total INTEGER,
    passed INTEGER,
    failed INTEGER,
    errored INTEGER
);
CREATE TABLE IF NOT EXISTS evaluators (
    run_id TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    total INTEGER NOT NULL,
    passed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    errored INTEGER NOT NULL,
    success_rate REAL NOT NULL,
    average_score REAL,  -- NULL when the evaluator recorded no assertion
    duration_s REAL NOT NULL,
    PRIMARY KEY (run_id, evaluator)
);
CREATE TABLE IF NOT EXISTS items (
    run_id TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    item_id TEXT NOT NULL,
    item_index INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    duration_s REAL NOT NULL,
    failures TEXT NOT NULL,
    PRIMARY KEY (run_id, evaluator, item_index, repeat)
);
"""


def _allow_null_average_score(db: sqlite3.Connection) -> None:
    """A database made before evaluators without assertions had no score (NULL) declared
    `average_score` NOT NULL: copy its rows into the table as it is now."""
    columns = db.execute("PRAGMA table_info(evaluators)").fetchall()
    if not any(name == "average_score" and notnull for _, name, _, notnull, *_ in columns):
        return
    db.execute("ALTER TABLE evaluators RENAME TO evaluators_old")
    db.executescript(SCHEMA)
    db.execute("INSERT INTO evaluators SELECT * FROM evaluators_old")
    db.execute("DROP TABLE evaluators_old")


class SqliteOutput(OutputDriver):
    """Appends each run to a SQLite file: one row per run, per evaluator and per item.

    ``items.failures`` holds the messages of the item's failed gate assertions (or its
    error), one per line, empty when it passed. Rows are keyed by run id, so a resumed run
    updates its rows instead of duplicating them.
    """

    def __init__(self, path: str | Path = ".agenteval/results.sqlite") -> None:
        self.path = Path(path)
        self.run_id = "unknown"
        self.started_at = ""

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # `closing` closes the connection; `db` as a context manager makes one transaction,
        # committed on success and rolled back if the hook raises.
        with closing(sqlite3.connect(self.path)) as db, db:
            db.executescript(SCHEMA)
            _allow_null_average_score(db)
            yield db

    def start_run(self, run: RunInfo) -> None:
        """Remember the run id: every row of this run is keyed by it."""
        self.run_id = run.id
        self.started_at = run.started_at

    def output(self, summary: EvaluatorSummary) -> None:
        """Write the evaluator's row and one row per item."""
        rows = []
        for item in summary.items:
            failures = [
                f"{a.name}: {a.message}" for a in item.assertions if not a.passed and not a.soft
            ]
            if item.error is not None:
                failures.append(f"{item.error.stage}: {item.error.type}: {item.error.message}")
            rows.append(
                (
                    self.run_id,
                    summary.id or summary.name,
                    str(item.id),
                    item.index,
                    item.repeat,
                    item.status,
                    item.score,
                    item.duration_s,
                    "\n".join(failures),
                )
            )
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO evaluators VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.run_id,
                    summary.id or summary.name,
                    summary.name,
                    summary.status,
                    summary.total,
                    summary.passed,
                    summary.failed,
                    summary.errored,
                    summary.success_rate,
                    summary.score.average,
                    summary.duration_s.total,
                ),
            )
            db.executemany("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def finish_run(self, run: RunSummary) -> None:
        """Write the run's row, with its totals and exit code."""
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    run.started_at,
                    run.duration_s,
                    run.exit_code,
                    run.total,
                    run.passed,
                    run.failed,
                    run.errored,
                ),
            )
