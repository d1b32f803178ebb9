"""Finding evaluator classes in files and folders."""

from __future__ import annotations

import ast
import codecs
import importlib.machinery
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import _interrupt
from ._errors import DiscoveryError, described
from ._evaluator import BaseEvaluator

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})
"""Folders a folder's search never enters (environments are known by their ``pyvenv.cfg``
or ``conda-meta``, whatever their name; hidden folders are skipped too). Given as a PATH,
they are searched."""

_ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")

_on_path: set[Path] = set()
"""The evaluator folders put on ``sys.path`` so far."""

_shims: Path | None = None
"""A folder on ``sys.path`` holding, for each evaluator file imported, a module of the name
it was imported under that imports it again: a process ``multiprocessing`` spawns (rather
than forks) gets the functions and classes of an evaluator file it is sent by that name."""

_SHIM = """# written by agenteval: {path!r} again, under this module's name
import importlib.util as _util, sys as _sys

_spec = _util.spec_from_file_location(__name__, {path!r})
_module = _util.module_from_spec(_spec)
_sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
"""


@dataclass(frozen=True)
class EvaluatorSpec:
    """A discovered evaluator class and where it was defined."""

    cls: type[BaseEvaluator]
    file: str
    line: int

    @property
    def id(self) -> str:
        """``path::ClassName``, stable across runs (used in journals and ``-k``)."""
        return f"{self.file}::{self.cls.__name__}"

    @property
    def name(self) -> str:
        """Display name: the class's ``name`` attribute or its class name."""
        return self.cls.display_name()


def _display_path(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)
_ALIAS = re.compile(r"\b(\w+)[ \t]+as[ \t]+(\w+)")


def _candidate_files(folder: Path) -> list[Path]:
    """The files of ``folder`` to import: those that mention ``BaseEvaluator``, or that
    define a class deriving, by the folder's sources, from a base class of yours that
    derives from it (kept in a helper file, say)."""
    texts: dict[Path, str] = {}
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).parts
        if any(p.startswith(".") or p in _SKIP_DIRS for p in rel[:-1]):
            continue
        if any(
            (folder / Path(*rel[:i]) / mark).exists()
            for i in range(1, len(rel))
            for mark in _ENVIRONMENT_MARKS
        ):
            continue
        helper = path.name.startswith("_")  # never imported: read for its classes only
        if path.exists() and not path.is_file() and not path.is_dir():
            if helper:
                continue
            # a pipe would never end a read
            raise DiscoveryError(f"Could not read {path}: not a regular file (a pipe or device)")
        try:
            texts[path] = _source_text(path.read_bytes())
        except OSError as exc:
            if helper:
                continue
            raise DiscoveryError(f"Could not read {path}: {exc.strerror or exc}") from None
    classes = {path: _classes(text) for path, text in texts.items()}
    aliases = [pair for text in texts.values() for pair in _ALIAS.findall(text)]
    names = _evaluator_class_names([c for found in classes.values() for c in found], aliases)
    return [
        path
        for path, text in texts.items()
        if not path.name.startswith("_")
        and ("BaseEvaluator" in text or any(bases & names for _, bases in classes[path]))
    ]


def _source_text(data: bytes) -> str:
    """A source file's text, to look for evaluators in: UTF-8, or UTF-16 when it starts
    with that byte order mark (Python refuses to import it, and says so)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def _classes(text: str) -> list[tuple[str, set[str]]]:
    """The classes a source defines, each with the names of its bases (``a.B`` is ``B``)."""
    return [
        (name, {base.split("=")[-1].strip().rsplit(".", 1)[-1] for base in listed.split(",")})
        for name, listed in _CLASS.findall(text)
    ]


def _evaluator_class_names(
    classes: list[tuple[str, set[str]]], aliases: list[tuple[str, str]]
) -> set[str]:
    """``BaseEvaluator`` and the classes derived from it among ``classes``, directly or not,
    under their own names and those they are imported as (``import SupportBase as SB``)."""
    names = {"BaseEvaluator"}
    while (
        grown := (
            {name for name, bases in classes if bases & names}
            | {alias for name, alias in aliases if name in names}
        )
        - names
    ):
        names |= grown
    return names


def _import_file(path: Path, shown: str, root: Path) -> object:
    folder = path.parent.resolve()
    if folder not in _on_path:
        _refuse_shadows(folder, root)
        _on_path.add(folder)
    _forget_helpers_of_other_folders(folder)
    for entry in (str(root.resolve()), str(folder)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    name = "_agenteval_eval_" + re.sub(r"\W", "_", shown.removesuffix(".py"))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DiscoveryError(f"Could not import {shown}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        _importable_again(name, path)
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        if _utf16(path):
            raise DiscoveryError(
                f"{shown} is saved as UTF-16, which Python cannot import: save it as UTF-8"
            ) from None
        at = f":{exc.lineno}" if exc.lineno else ""
        raise DiscoveryError(
            f"{shown}{at}: SyntaxError: {exc.msg} — fix the file, or rename it "
            f"with a leading '_' to exclude it"
        ) from None
    except BaseException as exc:
        del sys.modules[name]
        if isinstance(exc, KeyboardInterrupt) and _interrupt.seen():
            raise  # Ctrl-C: the command is interrupted, the file did nothing wrong
        line = _line_in(exc, path)
        where = f"{shown}:{line}" if line else shown
        raise DiscoveryError(f"Could not import {where}: {described(exc)}") from None
    return module


def _importable_again(name: str, path: Path) -> None:
    """Let another interpreter import ``path`` as ``name`` (see ``_shims``), if a file can
    be written for it (only a process an item spawns needs it)."""
    global _shims
    try:
        if _shims is None:
            import atexit
            import shutil
            import tempfile

            _shims = Path(tempfile.mkdtemp(prefix="agenteval-modules-"))
            sys.path.append(str(_shims))
            atexit.register(shutil.rmtree, _shims, True)
        shim = _shims / f"{name}.py"
        if not shim.exists():  # (written whole or not at all: renamed into place)
            part = shim.with_suffix(".part")
            part.write_text(_SHIM.format(path=str(path.resolve())), encoding="utf-8")
            part.replace(shim)
    except OSError:  # (a full or read-only temporary folder, a file size limit)
        return


def _utf16(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(2) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    except OSError:
        return False


def _refuse_redefined(path: Path, shown: str, specs: list[EvaluatorSpec]) -> None:
    """An evaluator class defined twice in one file (a copy pasted and not renamed): the
    second replaces the first, whose items would silently never run."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return
    names = {spec.cls.__name__ for spec in specs}
    heads = re.findall(r"^class[ \t]+(\w+)", text, re.MULTILINE)
    if all(heads.count(name) < 2 for name in names):
        return  # the common case, told without parsing the file again
    lines: dict[str, list[int]] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            lines.setdefault(node.name, []).append(node.lineno)
    for name, at in lines.items():
        if len(at) > 1:
            listed = ", ".join(map(str, at[:-1])) + f" and {at[-1]}"
            raise DiscoveryError(
                f"{shown}:{at[-1]}: class {name} is defined {len(at)} times (lines "
                f"{listed}): each replaces the one before, whose items would never run — "
                "rename all but one"
            )


def _refuse_shadows(folder: Path, root: Path) -> None:
    """A module of ``folder`` named like one found elsewhere and not imported yet
    (``yaml.py``, ``openai.py``): with the folder on ``sys.path``, whatever imports that
    name later — agenteval's YAML datasets, its OpenAI model — would get the file instead."""
    elsewhere = [p for p in sys.path if p and Path(p).resolve() not in _on_path | {folder}]
    for file in sorted(folder.glob("*.py")):
        name = file.stem
        if not name.isidentifier() or name.startswith("__") or name in sys.modules:
            continue
        if name in sys.builtin_module_names:
            origin = "built into Python"
        else:
            spec = importlib.machinery.PathFinder.find_spec(name, elsewhere)
            if spec is None:
                continue
            origin = spec.origin or (list(spec.submodule_search_locations or ()) or ["?"])[0]
        raise DiscoveryError(
            f"{_display_path(file, root)} has the name of the module {name!r} ({origin}): "
            f"with its folder on sys.path, `import {name}` would load this file instead — "
            f"rename it (e.g. {name}_eval.py)"
        )


def _forget_helpers_of_other_folders(folder: Path) -> None:
    """Forget the modules another evaluator folder's files imported from that folder
    under a name ``folder`` has a module of, too (``_support.py`` in both): the files of
    ``folder`` then import their own, and those that imported the other keep it."""
    if len(_on_path) < 2:
        return  # no other folder's modules to forget
    forgotten = set()
    for name in _module_names(folder) & sys.modules.keys():
        source = getattr(sys.modules[name], "__file__", None)
        if not source:
            continue
        where = Path(source).resolve().parent
        if where.name == name:  # a package: its folder's parent is the folder on the path
            where = where.parent
        if where in _on_path and where != folder:
            forgotten.add(name)
    for name in [n for n in sys.modules if n.partition(".")[0] in forgotten]:
        del sys.modules[name]


_names_in: dict[Path, set[str]] = {}


def _module_names(folder: Path) -> set[str]:
    """The names ``folder`` has modules (``x.py``) and packages (``x/``) of; read once."""
    names = _names_in.get(folder)
    if names is None:
        try:
            names = {
                p.stem if p.suffix == ".py" else p.name
                for p in folder.iterdir()
                if p.suffix == ".py" or (p.is_dir() and p.name.isidentifier())
            }
        except OSError:
            names = set()
        _names_in[folder] = names
    return names


def _line_in(exc: BaseException, path: Path) -> int | None:
    """The deepest line of ``path`` in the traceback of ``exc``."""
    line = None
    target = str(path.resolve())
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()) == target:
            line = frame.lineno
    return line


def _source_line(cls: type) -> int:
    try:
        return inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return 0


def _classes_in(module: object, shown: str) -> list[EvaluatorSpec]:
    specs = []
    for obj in vars(module).values():
        if (
            isinstance(obj, type)
            and issubclass(obj, BaseEvaluator)
            and obj.__module__ == getattr(module, "__name__", None)
            and not obj.is_abstract()
        ):
            specs.append(EvaluatorSpec(obj, shown, _source_line(obj)))
    return specs


def discover(
    paths: Sequence[str | Path | type[BaseEvaluator]], root: Path | None = None
) -> list[EvaluatorSpec]:
    """Import the evaluator files under ``paths`` and return their evaluator classes.

    Ordered by file path then line. Classes may be passed directly instead of paths, and a
    file's ``path::Class`` (as reports name an evaluator) picks that one class of it.
    """
    root = root or Path.cwd()
    specs: list[EvaluatorSpec] = []
    imported: dict[str, list[EvaluatorSpec]] = {}
    for entry in paths:
        if isinstance(entry, type):
            if not issubclass(entry, BaseEvaluator):
                raise DiscoveryError(f"{entry.__qualname__} is not a BaseEvaluator subclass")
            try:
                source = inspect.getsourcefile(entry)
            except (OSError, TypeError):  # defined in a notebook, REPL or exec()'d code
                source = None
            shown = _display_path(Path(source), root) if source else entry.__module__
            specs.append(EvaluatorSpec(entry, shown, _source_line(entry)))
            continue
        if not str(entry).strip():  # Path("") is the working directory
            raise DiscoveryError(
                "An empty PATH was given (an unset shell variable?): pass a file or folder "
                "of evaluators"
            )
        text, wanted = str(entry), None
        if "::" in text and not Path(text).exists():
            text, _, wanted = text.partition("::")
        path = Path(text)
        if not path.exists():
            raise DiscoveryError(
                f"Path {text!r} does not exist: pass a file or folder of evaluators"
            )
        if wanted is not None and not path.is_file():
            raise DiscoveryError(
                f"{str(entry)!r}: '::{wanted}' picks a class of a file, and {text!r} is a "
                f"folder: use -k {wanted!r}"
            )
        files = _candidate_files(path) if path.is_dir() else [path]
        for file in files:
            shown = _display_path(file, root)
            if shown not in imported:
                found = _classes_in(_import_file(file, shown, root), shown)
                _refuse_redefined(file, shown, found)
                imported[shown] = found
            chosen = imported[shown]
            if wanted is not None:
                chosen = [s for s in chosen if s.cls.__name__ == wanted]
                if not chosen:
                    names = ", ".join(s.cls.__name__ for s in imported[shown]) or "none"
                    raise DiscoveryError(
                        f"{shown} has no evaluator class {wanted!r} (its evaluators: {names})"
                    )
            specs.extend(chosen)
    unique = {s.id: s for s in specs}
    return sorted(unique.values(), key=lambda s: (s.file, s.line))


def select(
    specs: Iterable[EvaluatorSpec], pattern: str | None = None, tags: Sequence[str] = ()
) -> list[EvaluatorSpec]:
    """Keep evaluators whose name or id contains ``pattern`` and that carry one of ``tags``
    (both compared regardless of case)."""
    chosen = []
    needle = pattern.lower() if pattern else None
    wanted = {tag.lower() for tag in tags}
    for spec in specs:
        if needle and needle not in spec.id.lower() and needle not in spec.name.lower():
            continue
        if wanted and not wanted & {tag.lower() for tag in spec.cls.tags}:
            continue
        chosen.append(spec)
    return chosen
