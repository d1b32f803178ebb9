"""The Typer application: a thin layer over :func:`agenteval.run_evaluations`.

Only typer is imported at module level, so ``agenteval --help`` stays fast; the runner,
pydantic and rich load when a command actually runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import _interrupt
from .._version import __version__
from ._exit import exit_with, internal_error, masked

app = typer.Typer(
    name="agenteval",
    help="Evaluate LLM agents: run evaluator classes over datasets and report a verdict.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
cache_app = typer.Typer(
    help="Manage the on-disk cache of judge and embedding calls.", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")

EXIT_CODES = """Exit codes: 0 all passed (or success rate >= --min-success-rate); 1 assertions
failed; 2 items errored, timed out or crashed (beyond --max-errors), a driver failed, or a
usage/config/dataset error; 130 interrupted by Ctrl-C; 143 terminated by SIGTERM."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agenteval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Evaluate LLM agents."""


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"agenteval: error: {masked(message)}", err=True)
    return typer.Exit(code)


@app.command(epilog=EXIT_CODES)
def run(
    paths: Annotated[
        list[str] | None,
        # (described in the docstring: typer would list it with its Python type)
        typer.Argument(show_default=False, metavar="PATH", hidden=True),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", metavar="FILE", help="Config file [default: ./evaluation.py if present]."
        ),
    ] = None,
    bootstrap: Annotated[
        Path | None,
        typer.Option("--bootstrap", metavar="FILE", help="Python file to run before discovery."),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every item and assertion.")
    ] = False,
    pattern: Annotated[
        str | None,
        typer.Option(
            "-k",
            metavar="PATTERN",
            help="Only evaluators whose name or path::Class contains PATTERN.",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", metavar="TAG", help="Only evaluators with this tag (repeatable)."),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", "-c", min=1, metavar="N", help="Items in flight at once."),
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            metavar="NAME",
            help="auto | inline | fork | async (auto: fork for -c N, --timeout or --isolation "
            "worker; else inline).",
        ),
    ] = "auto",
    isolation: Annotated[
        str,
        typer.Option(
            "--isolation",
            metavar="MODE",
            help="fork executor: item (a process per item) | worker (processes reused).",
        ),
    ] = "item",
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Seconds per item before it is stopped (in child processes, unless --executor async).",
        ),
    ] = None,
    grace: Annotated[
        float,
        typer.Option(
            "--grace", metavar="SECONDS", help="Seconds in-flight items get after the first Ctrl-C."
        ),
    ] = 10.0,
    max_errors: Annotated[
        int,
        typer.Option(
            "--max-errors", min=0, metavar="N", help="Item errors tolerated before exit code 2."
        ),
    ] = 0,
    max_output_bytes: Annotated[
        int,
        typer.Option(
            "--max-output-bytes",
            min=0,
            metavar="BYTES",
            help="Outputs above this are truncated in records (0: no limit).",
        ),
    ] = 1024 * 1024,
    output_json: Annotated[  # (text: a Path would turn '' into '.')
        str | None,
        typer.Option("--output-json", metavar="FILE", help="Also write the JSON report here."),
    ] = None,
    min_success_rate: Annotated[
        float,
        typer.Option(
            "--min-success-rate",
            metavar="RATE",  # (checked by run_evaluations: click's range check lets nan in)
            help="Exit 0 when every evaluator reaches this success rate (0 to 1).",
        ),
    ] = 1.0,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Resume a run (default: the latest of these evaluators); only unfinished items run.",
            metavar="[RUN_ID]",
        ),
    ] = None,
    retry_errors: Annotated[
        str | None,
        typer.Option(
            "--retry-errors",
            help="Re-run the error/timeout/crashed items of RUN_ID.",
            metavar="RUN_ID",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Resume even if evaluator files or datasets changed.")
    ] = False,
    runs_dir: Annotated[  # (text: a Path would turn '' into '.')
        str, typer.Option("--runs-dir", metavar="DIR", help="Where run journals are kept.")
    ] = ".agenteval/runs",
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the judge/embedding cache.")
    ] = False,
    no_progress: Annotated[
        bool, typer.Option("--no-progress", help="No live progress bar.")
    ] = False,
) -> None:
    """Run evaluators, report, and exit with the verdict.

    Each PATH is an evaluator file or a folder of them (default: evaluators/), or
    FILE::Class for one evaluator of a file."""
    from .. import _errors
    from .._item import HardStop
    from .._runner import EXIT_SIGNAL, run_evaluations
    from ..outputs import JsonOutput
    from ..outputs._json import unwritable
    from ..outputs._text import one_line

    if output_json == "-":  # (a file named "-" would be written)
        raise _fail(
            "--output-json needs a file path, got '-': the console report is on stdout; for "
            "the JSON report there, give /dev/stdout and output = [] in the config"
        )
    if output_json is not None and not output_json.strip():
        raise _fail("--output-json got an empty path: give a file, or leave it out")
    if output_json and (problem := unwritable(output_json)):
        raise _fail(f"--output-json: {problem}")
    for option, value in (("--resume", resume), ("--retry-errors", retry_errors)):
        if value is not None and not value.strip():  # an empty CI variable, say
            raise _fail(f"{option} got an empty run id: give a run id, or leave it out")
    if not runs_dir.strip():  # the journals would go straight into the working directory
        raise _fail("--runs-dir got an empty path: give a folder, or leave it out")
    if executor not in ("auto", "inline", "fork", "async"):
        raise _fail(f"--executor must be one of auto, inline, fork, async; got {executor!r}")
    if isolation not in ("item", "worker"):
        raise _fail(f"--isolation must be item or worker; got {isolation!r}")
    notices: list[str] = []
    extra = [JsonOutput(output_json)] if output_json else []
    for report in extra:  # (before any error this run may still end with: none is its own)
        report.discard_earlier()
    try:
        summary = run_evaluations(
            [str(Path(p)) if p.strip() else p for p in paths] if paths else ["evaluators"],
            concurrency=concurrency,
            executor=executor,  # type: ignore[arg-type]
            config=config,
            filter=pattern,
            tags=tag or (),
            bootstrap=bootstrap,
            min_success_rate=min_success_rate,
            max_errors=max_errors,
            timeout=timeout,
            grace=grace,
            max_output_bytes=max_output_bytes or None,
            isolation=isolation,  # type: ignore[arg-type]
            resume=(True if resume == _LATEST else resume),
            retry_errors=retry_errors,
            force=force,
            runs_dir=Path(runs_dir),
            cache=not no_cache,
            extra_outputs=extra,
            notices=notices,
            argv=["agenteval", *sys.argv[1:]],
            verbose=verbose or None,
            progress=False if no_progress else None,
        )
    except _errors.AgentEvalError as exc:
        for notice in notices:
            typer.echo(f"agenteval: {masked(notice)}", err=True)
        raise _fail(str(exc)) from None
    except HardStop as exc:  # a second signal while what was set up was torn down
        raise _fail(f"stopped at once by a second {exc}", EXIT_SIGNAL.get(str(exc), 130)) from None
    shown = _shown_on_stderr() if summary.driver_errors else frozenset()
    for error in summary.driver_errors:  # (for the log: unless the console's verdict, on
        if error not in shown:  # the same file, listed it already)
            typer.echo(f"agenteval: output driver failed: {one_line(error)}", err=True)
    raise typer.Exit(summary.exit_code)


def _shown_on_stderr() -> frozenset[str]:
    if "agenteval.outputs._console" not in sys.modules:  # no console ran
        return frozenset()
    from ..outputs._console import shown_on

    return shown_on(2)


_TEMPLATE = '''"""{class_name}: evaluates ... (describe what this evaluator checks)."""

from __future__ import annotations

from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains
from agenteval.datasets import JsonDataset


class {class_name}(BaseEvaluator):
    # def set_up(self) -> None:
    #     """Runs once before any item: build your agent, open clients."""
    #     self.agent = MyAgent()

    def get_dataset(self) -> JsonDataset:
        return JsonDataset(Path(__file__).parent / "datasets" / "{snake}.json")

    def run(self, item: dict) -> str:
        # Replace with a call to your agent, e.g. `return self.agent.chat(item["input"])`.
        return item["input"]

    def evaluate(self, output: str, item: dict) -> None:
        self.assert_that(StringContains(item["reference"]), output)
'''

_TEMPLATE_NAMES = frozenset({"Path", "BaseEvaluator", "StringContains", "JsonDataset"})
"""What the template imports: a class of the same name would hide it."""

_DATASET = """[
  {"id": "order-help", "input": "Hello, I need help with my order", "reference": "order"}
]
"""


def snake_case(name: str) -> str:
    """``App\\\\Evaluators\\\\RefundEvaluator`` or ``app.evaluators.RefundEvaluator`` → ``refund_evaluator``.

    Letters of any script are kept (``Проверка`` → ``проверка``), as Python allows them in
    module names."""
    import re

    last = re.split(r"[\\\\./:]+", name.strip())[-1]
    out: list[str] = []
    for i, ch in enumerate(last):
        before, after = last[i - 1 : i], last[i + 1 : i + 2]
        if ch.isupper() and (
            before.islower() or before.isdigit() or (before.isupper() and after.islower())
        ):
            out.append("_")  # RefundEvaluator → Refund_Evaluator, HTTPCheck → HTTP_Check
        out.append(ch)
    return re.sub(r"[\W_]+", "_", "".join(out)).strip("_").lower()


@app.command("make:evaluator")
def make_evaluator(
    name: Annotated[str, typer.Argument(metavar="NAME", hidden=True, show_default=False)],
    directory: Annotated[
        Path, typer.Option("--dir", metavar="DIR", help="Folder to write into.")
    ] = Path("evaluators"),
) -> None:
    """Write a new evaluator (and its dataset) from a template.

    NAME is the class name, e.g. RefundEvaluator (a namespace prefix is ignored)."""
    import keyword
    import re

    given = name.strip().removesuffix(".py")  # (a file's name: RefundEvaluator.py)
    class_name = re.split(r"[\\./:]+", given)[-1]
    if (
        not class_name.isidentifier()
        or not class_name[0].isalpha()
        or keyword.iskeyword(class_name)
    ):
        raise _fail(f"{name!r} is not a valid class name: use something like RefundEvaluator")
    class_name = class_name[0].upper() + class_name[1:]
    if class_name in _TEMPLATE_NAMES:
        raise _fail(
            f"{class_name!r} is a name the evaluator template imports: use something like "
            f"{class_name}Evaluator"
        )
    snake = snake_case(class_name)
    target = directory / f"{snake}.py"
    dataset = directory / "datasets" / f"{snake}.json"
    for path in (target, dataset):
        if path.exists():
            raise _fail(f"{path} already exists: choose another name or remove the file")
    try:
        dataset.parent.mkdir(parents=True, exist_ok=True)
        dataset.write_text(_DATASET, encoding="utf-8")
        target.write_text(_TEMPLATE.format(class_name=class_name, snake=snake), encoding="utf-8")
    except OSError as exc:
        if dataset.is_file() and not target.exists():  # leave no half-made evaluator
            dataset.unlink()
        raise _fail(
            f"Could not write into {str(directory)!r}: {exc.strerror or exc}: pass --dir with "
            f"a folder you can write to"
        ) from None
    typer.echo(f"Created {target} and {dataset}")
    import shlex

    typer.echo(f"Run it with: agenteval run {shlex.quote(str(target))}")  # (to paste as is)


@cache_app.command("clear")
def cache_clear(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", metavar="DIR", help="Cache folder [default: .agenteval/cache]."),
    ] = None,
) -> None:
    """Delete every cached judge, simulator and embedding response."""
    from .._errors import AgentEvalError
    from ..llm._cache import clear_cache

    if directory is not None and not directory.expanduser().exists():  # a typo, most likely
        raise _fail(f"No folder {str(directory)!r}: check --dir (nothing was removed)")
    try:
        removed = clear_cache(directory)
    except AgentEvalError as exc:
        raise _fail(str(exc)) from None
    if removed is None:
        typer.echo("Removed the cache file, which was damaged (nothing in it could be read)")
    else:
        typer.echo(f"Removed {removed} cached response{'s' if removed != 1 else ''}")


_LATEST = "\0latest"


def _normalise_resume(argv: list[str]) -> list[str]:
    """Let ``--resume`` stand alone: click options need a value, so give it one."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--resume":
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and not nxt.strip():  # `--resume "$RUN_ID"`, empty: refused
                continue
            if nxt is None or nxt.startswith("-") or (_exists(nxt) and not _is_run(nxt)):
                out.append(_LATEST)  # (not a run's folder: one of the paths to run)
    return out


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except OSError:  # a name too long, say: no path of ours
        return False


def _is_run(path: str) -> bool:
    from .._journal import is_run_dir

    return is_run_dir(path)


def _value_missing(cli: Any, argv: list[str]) -> str | None:
    """An option of ``agenteval run`` given another option as its value (``--tag
    --no-progress``: click would take ``--no-progress`` for the tag), as a message."""
    if argv[:1] != ["run"]:
        return None
    import itertools

    from typer.core import TyperOption

    command = cli.commands["run"]
    options = [p for p in command.params if isinstance(p, TyperOption)]
    takes_value = {n for p in options if not p.is_flag for n in p.opts}
    names = {n for p in options for n in (*p.opts, *p.secondary_opts)} | {"--help"}
    for arg, nxt in itertools.pairwise(argv):
        if arg == "--":  # what follows is paths only
            break
        option = _last_short_option(arg, takes_value) or arg
        if option in takes_value and option != "--resume" and nxt.split("=", 1)[0] in names:
            return f"{option} needs a value, got the option {nxt}"
    return None


def _last_short_option(arg: str, takes_value: set[str]) -> str | None:
    """In a cluster of short options (``-vk``), the one that takes the next argument as
    its value: a value-taking option that ends the cluster. None for anything else."""
    if not arg.startswith("-") or arg.startswith("--") or len(arg) < 3:
        return None
    for i, letter in enumerate(arg[1:], start=1):
        if f"-{letter}" in takes_value:  # the rest of the cluster, if any, is its value
            return f"-{letter}" if i == len(arg) - 1 else None
    return None


def main() -> None:
    """Run the CLI (``agenteval`` console script)."""
    try:
        args = _normalise_resume(sys.argv[1:])
        cli = typer.main.get_command(app)  # (what app() does first: built once, here)
        if problem := _value_missing(cli, args):
            typer.echo(f"agenteval: error: {problem} (see `agenteval run --help`)", err=True)
            exit_with(2)
        code = cli(args=args, prog_name="agenteval", standalone_mode=False)
        if code == 130 and _interrupt.seen():  # typer took the Ctrl-C for a silent exit
            typer.echo("agenteval: error: interrupted", err=True)
    except typer.Abort:  # a Ctrl-C outside the run's own handling (older typer)
        typer.echo("agenteval: error: interrupted", err=True)
        code = 130
    except Exception as exc:
        if not hasattr(exc, "format_message"):  # not a command-line usage error: a bug
            code = internal_error(exc)
        elif type(exc).__name__ == "NoArgsIsHelpError":  # bare `agenteval`: show the help
            typer.echo(exc.format_message())
            code = 0
        else:  # a bad option or value: one line, like every other misuse (click prints more)
            command = getattr(getattr(exc, "ctx", None), "command_path", None) or "agenteval"
            if command == "agenteval" and args[:1] and args[0] in getattr(cli, "commands", {}):
                command = f"agenteval {args[0]}"  # (a value missing at the end: the group's)
            message = f"agenteval: error: {exc.format_message()} (see `{command} --help`)"
            typer.echo(message, err=True)
            code = getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:  # not through typer: a Ctrl-C as it returned
        typer.echo("agenteval: error: interrupted", err=True)
        code = 130
    except SystemExit:
        raise
    except BaseException as exc:  # (GeneratorExit, a bare BaseException): a bug, never exit 1
        code = internal_error(exc)
    code = code if isinstance(code, int) else 0
    # the run is over and its files are written: a late Ctrl-C or SIGTERM ends the exit
    # at once (exit handlers, threads left waited for) with the run's own code, not by a
    # death by signal or a traceback
    _interrupt.settle(code)
    exit_with(code)
