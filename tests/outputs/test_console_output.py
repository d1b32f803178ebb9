"""ConsoleOutput: the report lines, verbose mode, verdict and neutralised control characters."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agenteval import BaseEvaluator, run_evaluations
from agenteval.assertions import StringContains
from agenteval.datasets import ArrayDataset
from agenteval.outputs import ConsoleOutput, OutputDriver
from agenteval.outputs._text import one_line, safe


class ShopEvaluator(BaseEvaluator):
    name = "Shop answers"

    def get_dataset(self) -> ArrayDataset:
        return ArrayDataset([{"id": "ok", "q": "refund"}, {"id": "bad", "q": "nope\x1b[31m"}])

    def run(self, item: dict[str, str]) -> str:
        return item["q"]

    def evaluate(self, output: str, item: dict[str, str]) -> None:
        self.assert_that(StringContains("refund"), output)
        self.assert_that(StringContains("zzz"), output, soft=True)


def _lines(verbose: bool) -> list[str]:
    stream = io.StringIO()
    run_evaluations(
        [ShopEvaluator], outputs=[ConsoleOutput(verbose=verbose, stream=stream)], journal=False
    )
    return stream.getvalue().splitlines()


def test_console_report_lists_failures_with_call_sites() -> None:
    lines = _lines(verbose=False)
    assert lines[0].startswith("agenteval · run ") and lines[0].endswith(
        " · 1 evaluator · sequential"
    )
    assert lines[2].startswith("FAILED  Shop answers  ")
    assert lines[2].endswith("test_console_output.py")
    assert lines[3] == (
        "  2 items: 1 passed, 1 failed, 0 errors · success rate 50.0% · avg score 0.25 · assertions 1/4"
    )
    assert lines[4].startswith("  time: ")
    fails = [line for line in lines if line.startswith("  FAIL ")]
    assert len(fails) == 1
    assert fails[0].startswith(
        "  FAIL     item 'bad' · StringContains · "
        "Expected 'nope\\x1b\\x5b\\x33\\x31\\x6d' to contain 'refund' (score 0.00)  "
    )
    assert fails[0].endswith("test_console_output.py:31")
    softs = [line for line in lines if line.startswith("  SOFT ")]
    assert len(softs) == 2
    assert lines[-1].startswith(
        "FAILED: 2 items, 1 passed, 1 failed, 0 errors · success rate 50.0% · "
    )
    assert lines[-1].endswith(" · exit 1")


def test_console_verbose_lists_every_item() -> None:
    lines = _lines(verbose=True)
    assert any(line.startswith("  PASSED   item 'ok' · score 0.50 · ") for line in lines)
    assert "      ok  StringContains (score 1.00)" in lines


def test_safe_neutralises_control_characters() -> None:
    assert safe("a\x1b[2Jb\x07c\td") == "a\\x1b\\x5b\\x32\\x4ab\\x07c\td"
    assert safe("x" * 10, limit=5) == "xxxx…"


def test_safe_neutralises_bidi_and_line_separators() -> None:
    assert safe("abc\u202edef\u2066x\u2028y") == "abc\\u202edef\\u2066x\\u2028y"


def test_safe_shows_zero_width_characters() -> None:
    assert safe("pay\u200bpal\ufeff\u2060") == "pay\\u200bpal\\ufeff\\u2060"


def test_one_line_marks_line_breaks_but_not_a_final_one() -> None:
    assert one_line("printed\nmore\r\nlast\n") == "printed ⏎ more ⏎ last"


def test_a_long_error_message_keeps_its_end_where_the_fix_is() -> None:
    class Unfixable(ShopEvaluator):
        def run(self, item: dict[str, str]) -> str:
            raise RuntimeError("the judge said: " + "blah " * 100 + "; use a model that can")

    stream = io.StringIO()
    run_evaluations([Unfixable], outputs=[ConsoleOutput(stream=stream)], journal=False)
    (line, *_) = [x for x in stream.getvalue().splitlines() if " · run · " in x]
    assert " · run · RuntimeError: the judge said: blah blah" in line
    assert " … " in line and len(line.split(" · ", 2)[2]) < 400
    assert line.endswith("; use a model that can  " + line.rsplit("  ", 1)[1])


def test_an_evaluator_name_with_a_line_break_stays_on_its_line() -> None:
    class Broken(ShopEvaluator):
        name = "Shop\nanswers \x1b[31mred"

    stream = io.StringIO()
    run_evaluations([Broken], outputs=[ConsoleOutput(stream=stream)], journal=False)
    header = stream.getvalue().splitlines()[2]
    assert header.startswith("FAILED  Shop ⏎ answers \\x1b\\x5b\\x33\\x31\\x6dred  ")


def test_piped_console_writes_plain_lines_without_importing_rich(tmp_path: Path) -> None:
    """Piped (CI), there are no colours to draw: rich's import stays out of the run."""
    script = (
        "import sys\n"
        "from agenteval import BaseEvaluator, run_evaluations\n"
        "from agenteval.assertions import StringContains\n"
        "class E(BaseEvaluator):\n"
        "    def get_dataset(self): return [{'id': 1}]\n"
        "    def run(self, item): return 'x'\n"
        "    def evaluate(self, output, item): self.assert_that(StringContains('y'), output)\n"
        "run_evaluations([E], journal=False)\n"
        "print('rich imported:', 'rich' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "rich imported: False"
    assert "\x1b[" not in out.stdout
    assert "FAILED: 1 item, 0 passed, 1 failed" in out.stdout


def test_force_color_draws_colours_even_when_piped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    stream = io.StringIO()
    run_evaluations([ShopEvaluator], outputs=[ConsoleOutput(stream=stream)], journal=False)
    assert "\x1b[" in stream.getvalue()


@pytest.mark.parametrize(
    ("argv", "retrying", "hint"),
    [
        (["agenteval", "run", "evals/", "-c", "4"], False, "agenteval run evals/ -c 4 --resume R"),
        # a resume's own value goes, a run's folder included (it exists, but is no evaluator)
        (["agenteval", "run", "--resume", ".agenteval/runs/R", "-c", "4"], False, None),
        # an interrupted retry goes on retrying: a resume would keep the errors not retried
        (["agenteval", "run", "evals/", "--retry-errors", "R"], True, None),
        # after `--`, all is paths: the resume goes before it
        (
            ["agenteval", "run", "-c", "4", "--", "evals/"],
            False,
            "agenteval run -c 4 --resume R -- evals/",
        ),
        # a run resumed from a folder outside the runs folder is named by its path
        (
            ["agenteval", "run", "--resume", "moved/R", "-c", "4"],
            False,
            "agenteval run -c 4 --resume moved/R",
        ),
        (
            ["agenteval", "run", "--runs-dir", "moved", "--resume=moved/R"],
            False,
            "agenteval run --runs-dir moved --resume R",
        ),
    ],
)
def test_console_resume_hint_repeats_the_command_with_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    retrying: bool,
    hint: str | None,
) -> None:
    from agenteval.outputs._base import RunInfo

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".agenteval" / "runs" / "R").mkdir(parents=True)
    (tmp_path / ".agenteval" / "runs" / "R" / "manifest.json").write_text("{}")
    (tmp_path / "moved" / "R").mkdir(parents=True)
    (tmp_path / "moved" / "R" / "manifest.json").write_text("{}")
    console = ConsoleOutput(stream=io.StringIO(), progress=False)
    console.start_run(RunInfo("R", "", [], argv=argv, retrying=retrying))
    expected = (
        hint
        or {
            False: "agenteval run -c 4 --resume R",
            True: "agenteval run evals/ --retry-errors R",
        }[retrying]
    )
    assert console._resume_command("R") == expected


@pytest.mark.parametrize("width", [50, 59, 60, 80, 99, 100, 160])
def test_the_bar_keeps_done_total_counts_and_eta_whole_with_large_totals(width: int) -> None:
    from rich.console import Console
    from rich.progress import Progress

    from agenteval.outputs._console import _bar_columns, _name_width

    console = Console(width=width, force_terminal=True, color_system=None)
    name, columns = _bar_columns(width)
    name.max_width = _name_width(width, 5)  # (what a bar of 10,000 items makes it)
    bars = Progress(*columns, console=console)
    task = bars.add_task(
        "An evaluator with a long name " * 3,
        total=10_000,
        passed=9_999,
        failed=0,
        errors=10_000,
        errors_s="s",
    )
    bars.update(task, completed=9_999)
    with console.capture() as captured:
        console.print(bars.make_tasks_table(bars.tasks))
    line = captured.get().rstrip("\n")
    assert len(line) <= width
    assert "… " in line and " 9999/10000 " in line and line.endswith(" -:--:--"), line
    assert ("10000 errors" if width >= 100 else "10000!") in line, line


class OneInTwoThousand(BaseEvaluator):
    def get_dataset(self) -> list[dict[str, int]]:
        return [{"id": n} for n in range(2000)]

    def run(self, item: dict[str, int]) -> str:
        return "bad" if item["id"] == 7 else "refund"

    def evaluate(self, output: str, item: dict[str, int]) -> None:
        self.assert_that(StringContains("refund"), output)


class FailsOnEachItem(OutputDriver):
    def item_finished(self, result: Any) -> None:
        raise KeyError(f"{result.id} {os.environ['SHOP_API_KEY']}")

    def output(self, summary: Any) -> None:
        pass


def test_console_figures_and_driver_errors_stay_true_at_scale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 1,999 of 2,000 showed as "success rate 100.0%"; a driver failing on each item gave
    # 2,000 lines, each with the secret it held
    monkeypatch.setenv("SHOP_API_KEY", "sk-shop-0123456789abcdef")
    stream = io.StringIO()
    summary = run_evaluations(
        [OneInTwoThousand],
        outputs=[ConsoleOutput(stream=stream), FailsOnEachItem()],
        journal=False,
    )
    text = stream.getvalue()
    assert "1999 passed, 1 failed, 0 errors · success rate 99.9%" in text
    assert summary.driver_errors == [
        "FailsOnEachItem.item_finished() raised KeyError: '0 [REDACTED]' (2000 times)"
    ]
    assert "sk-shop" not in text


def test_a_driver_listed_twice_finishes_once_per_listing() -> None:
    class Counting(OutputDriver):
        finished = 0

        def output(self, summary: Any) -> None:
            pass

        def finish_run(self, run: Any) -> None:
            Counting.finished += 1

    twice = Counting()
    run_evaluations([ShopEvaluator], outputs=[twice, twice], journal=False)
    assert Counting.finished == 2


class Forging(StringContains):
    """An assertion whose name holds a line break (and what could pass for a report line)."""

    name = "Tone\nFAIL     item 'other' · injected"


class ForgedNameEvaluator(BaseEvaluator):
    def get_dataset(self) -> list[dict[str, str]]:
        return [{"id": "a"}]

    def run(self, item: dict[str, str]) -> str:
        return "rude"

    def evaluate(self, output: str, item: dict[str, str]) -> None:
        self.assert_that(Forging("polite"), output)


def test_a_line_break_in_a_name_is_shown_not_a_line_of_its_own() -> None:
    stream = io.StringIO()
    run_evaluations([ForgedNameEvaluator], outputs=[ConsoleOutput(stream=stream)], journal=False)
    lines = stream.getvalue().splitlines()
    assert not any(line.startswith("FAIL ") for line in lines)  # (was a forged line)
    (fail,) = [line for line in lines if line.startswith("  FAIL ")]
    assert fail.startswith("  FAIL     item 'a' · Tone ⏎ FAIL     item 'other' · injected · ")
