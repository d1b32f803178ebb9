"""The global concurrency limit: at most N items at once, each exactly once, shared by
every evaluator of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SPANS_EVALUATOR = """
import os
import time

from agenteval import BaseEvaluator


def span(name, seconds):
    # O_APPEND: one write per line, so a second run of the same item could never hide
    fd = os.open(os.path.join("spans", name), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"start {{time.time()!r}} {{os.getpid()}}\\n".encode())
        time.sleep(seconds)
        os.write(fd, f"end {{time.time()!r}} {{os.getpid()}}\\n".encode())
    finally:
        os.close(fd)


{classes}
"""

CLASS = """
class {name}(BaseEvaluator):
    def get_dataset(self):
        return [{{"id": "{name}-" + str(n)}} for n in range({count})]

    def run(self, item):
        span(item["id"], {seconds})
        return "done"

    def evaluate(self, output, item):
        assert output == "done"
"""


def write_spans_evaluator(cli: Any, classes: dict[str, tuple[int, float]]) -> None:
    body = "\n".join(
        CLASS.format(name=name, count=count, seconds=seconds)
        for name, (count, seconds) in classes.items()
    )
    cli.write("spans.py", SPANS_EVALUATOR.format(classes=body))
    (cli.root / "spans").mkdir()


def read_spans(folder: Path) -> dict[str, list[tuple[str, float, int]]]:
    spans = {}
    for path in sorted(folder.iterdir()):
        spans[path.name] = [
            (kind, float(t), int(pid))
            for kind, t, pid in (line.split() for line in path.read_text().splitlines())
        ]
    return spans


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    running = peak = 0
    for _, delta in events:  # at equal times, an end (-1) sorts before a start (+1)
        running += delta
        peak = max(peak, running)
    return peak


def intervals_of(spans: dict[str, list[tuple[str, float, int]]]) -> list[tuple[float, float]]:
    out = []
    for lines in spans.values():
        (start, _, pid_start), (end, _, pid_end) = [(t, kind, pid) for kind, t, pid in lines]
        assert pid_start == pid_end
        out.append((start, end))
    return out


def test_concurrency_runs_each_item_once_and_at_most_n_at_once(cli: Any) -> None:
    write_spans_evaluator(cli, {"Spans": (12, 0.4)})
    result = cli.run("spans.py", "-c", "3", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    spans = read_spans(cli.root / "spans")
    assert sorted(spans) == sorted(f"Spans-{n}" for n in range(12))
    # exactly once: one start and one end per item
    assert {name: [kind for kind, _, _ in lines] for name, lines in spans.items()} == {
        name: ["start", "end"] for name in spans
    }
    assert len({lines[0][2] for lines in spans.values()}) == 12  # one process per item
    assert max_overlap(intervals_of(spans)) == 3


def test_concurrency_limit_is_shared_by_evaluators(cli: Any) -> None:
    write_spans_evaluator(cli, {"First": (4, 1.5), "Second": (4, 1.5)})
    result = cli.run("spans.py", "-c", "8", "--no-progress", "--output-json", "report.json")
    assert result.returncode == 0, result.stdout + result.stderr
    intervals = intervals_of(read_spans(cli.root / "spans"))
    assert len(intervals) == 8
    assert max_overlap(intervals) == 8
    # both evaluators in one wave: about one item's 1.5 s, where two waves take 3 s or more
    wall = max(e for _, e in intervals) - min(s for s, _ in intervals)
    assert wall < 2.9
    report = cli.json("report.json")
    assert [(e["name"], e["summary"]["passed"]) for e in report["evaluators"]] == [
        ("First", 4),
        ("Second", 4),
    ]


def test_concurrency_one_runs_items_sequentially_in_process(cli: Any) -> None:
    write_spans_evaluator(cli, {"Spans": (3, 0.05)})
    proc = cli.start("spans.py", "--no-progress")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    spans = read_spans(cli.root / "spans")
    assert {lines[0][2] for lines in spans.values()} == {proc.pid}
    assert max_overlap(intervals_of(spans)) == 1
