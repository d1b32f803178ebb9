"""Sequential runs: Ctrl-C lets the item finish within the grace period, else cancels it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

AGENTEVAL = str(Path(sys.executable).parent / "agenteval")

HANGS = """
    import time
    from pathlib import Path
    from agenteval import BaseEvaluator

    class Hangs(BaseEvaluator):
        def get_dataset(self):
            return [{"id": "quick"}, {"id": "stuck"}, {"id": "never"}]

        def run(self, item):
            if item["id"] == "stuck":
                Path("started").write_text("yes")
                time.sleep(60)
            return "done"

        def evaluate(self, output, item):
            pass

        def tear_down(self):
            Path("torn-down").write_text("yes")
"""


CATCHES_ALL = """\
            try:
                time.sleep(60)
            except BaseException as exc:  # even the stop at once
                return f"caught {type(exc).__name__}"
"""


CLEANUP_BLOCKS = """\
            import threading
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as pool:  # its exit waits for the hung call
                pool.submit(threading.Event().wait).result()
"""


@pytest.mark.parametrize(
    "stuck",
    [
        None,
        CATCHES_ALL,  # it returns as if it had finished: still cut off
        CLEANUP_BLOCKS,  # the stop unwinds into code that blocks: it was a hang for good
    ],
)
def test_inline_interrupt_cancels_an_item_past_the_grace_period(
    tmp_path: Path, stuck: str | None
) -> None:
    source = textwrap.dedent(HANGS)
    if stuck is not None:
        source = source.replace("            time.sleep(60)\n", stuck)
        assert stuck in source
    (tmp_path / "evaluators").mkdir()
    (tmp_path / "evaluators" / "hangs.py").write_text(source)
    proc = subprocess.Popen(
        [AGENTEVAL, "run", "--grace", "0.5", "--output-json", "out.json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the stuck item never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130, out
    items = json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["items"]
    assert [(i["id"], i["status"]) for i in items] == [("quick", "passed"), ("stuck", "cancelled")]
    # one interrupt: the grace period ran out (no second interrupt came)
    assert items[1]["error"]["message"] == (
        "the run was interrupted and the item did not finish within the grace period"
    )
    assert "Resume with: agenteval run --grace 0.5 --output-json out.json --resume " in out
    records = next((tmp_path / ".agenteval" / "runs").glob("*/records.jsonl")).read_text()
    assert [json.loads(line)["status"] for line in records.splitlines()] == ["passed", "cancelled"]
    # the grace period's end is not a second signal: tear_down still ran
    assert (tmp_path / "torn-down").exists()
