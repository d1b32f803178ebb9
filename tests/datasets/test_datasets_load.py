from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval._errors import DatasetError
from agenteval.datasets import JsonDataset, JsonlDataset, YamlDataset, _file, load_dataset

Write = Callable[[str, "str | bytes"], Path]  # the `write` fixture, from conftest.py

FILE_CLASSES = [JsonDataset, JsonlDataset, YamlDataset]
CONTENT = {"json": '[{"n": 1}]', "jsonl": '{"n": 1}\n', "yaml": "- n: 1\n"}


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("cases.json", JsonDataset),
        ("cases.jsonl", JsonlDataset),
        ("cases.ndjson", JsonlDataset),
        ("cases.yaml", YamlDataset),
        ("cases.yml", YamlDataset),
        ("CASES.JSON", JsonDataset),
        ("cases.Yml", YamlDataset),
    ],
)
def test_load_dataset_chooses_class_by_suffix(write: Write, name: str, cls: type) -> None:
    kind = {JsonDataset: "json", JsonlDataset: "jsonl", YamlDataset: "yaml"}[cls]
    write(name, CONTENT[kind])
    dataset = load_dataset(name)
    assert type(dataset) is cls
    assert list(dataset) == [{"n": 1}]


def test_load_dataset_accepts_path_objects(write: Write) -> None:
    path = write("data/cases.yaml", "- n: 1\n")
    assert list(load_dataset(path.absolute())) == [{"n": 1}]


def test_load_dataset_unknown_suffix_is_an_error(write: Write) -> None:
    write("cases.txt", '{"n": 1}\n')
    with pytest.raises(DatasetError) as info:
        load_dataset("cases.txt")
    assert str(info.value) == (
        "Could not infer dataset format for 'cases.txt': use .json, .jsonl, .yaml or .yml, "
        "or pass format='json', 'jsonl' or 'yaml'"
    )


def test_load_dataset_format_overrides_suffix(write: Write) -> None:
    write("cases.txt", '{"n": 1}\n{"n": 2}\n')
    dataset = load_dataset("cases.txt", format="jsonl")
    assert type(dataset) is JsonlDataset
    assert [item["n"] for item in dataset] == [1, 2]


def test_load_dataset_unknown_format_is_an_error(write: Write) -> None:
    write("cases.csv", "n\n1\n")
    with pytest.raises(DatasetError) as info:
        load_dataset("cases.csv", format="csv")  # type: ignore[arg-type]
    assert str(info.value) == (
        "Unknown dataset format 'csv' for 'cases.csv': pass format='json', 'jsonl' or 'yaml'"
    )


def test_load_dataset_directory_is_an_error(write: Write) -> None:
    write("datasets/cases.json", "[]")
    with pytest.raises(DatasetError) as info:
        load_dataset("datasets")
    assert str(info.value) == (
        "Dataset path 'datasets' is a directory, not a file: point it at a .json, .jsonl "
        "or .yaml file"
    )


@pytest.mark.parametrize("cls", FILE_CLASSES)
def test_file_dataset_missing_relative_file_names_both_paths(
    write: Write, cls: type[JsonDataset]
) -> None:
    with pytest.raises(DatasetError) as info:
        cls("datasets/refunds.json")
    looked = os.path.join(os.getcwd(), "datasets", "refunds.json")
    assert str(info.value) == (
        f"Dataset file 'datasets/refunds.json' does not exist (looked for {looked!r}): fix "
        "the path; relative paths are read from the current directory, so build it from "
        "the evaluator's folder: Path(__file__).parent / 'datasets/refunds.json'"
    )


def test_file_dataset_missing_absolute_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "cases.json"
    with pytest.raises(DatasetError) as info:
        JsonDataset(missing)
    assert str(info.value) == f"Dataset file {str(missing)!r} does not exist: fix the path"


def test_file_dataset_missing_file_inside_current_directory(write: Write) -> None:
    with pytest.raises(DatasetError) as info:
        YamlDataset(Path.cwd() / "evaluators" / "cases.yaml")
    assert str(info.value) == "Dataset file 'evaluators/cases.yaml' does not exist: fix the path"


def test_file_dataset_path_through_a_file_is_missing(write: Write) -> None:
    write("cases.json", "[]")
    with pytest.raises(DatasetError, match=r"^Dataset file 'cases\.json/x\.json' does not exist"):
        JsonDataset("cases.json/x.json")


@pytest.mark.parametrize("cls", FILE_CLASSES)
def test_file_dataset_directory_is_an_error(write: Write, cls: type[JsonDataset]) -> None:
    write("datasets/a.json", "[]")
    with pytest.raises(DatasetError) as info:
        cls("datasets")
    assert str(info.value) == (
        "Dataset path 'datasets' is a directory, not a file: point it at a .json, .jsonl "
        "or .yaml file"
    )


@pytest.mark.parametrize("cls", FILE_CLASSES)
def test_file_dataset_permission_denied_is_an_error(
    write: Write, cls: type[JsonDataset], monkeypatch: pytest.MonkeyPatch
) -> None:
    kind = {JsonDataset: "json", JsonlDataset: "jsonl", YamlDataset: "yaml"}[cls]
    write("cases.data", CONTENT[kind])
    dataset = cls("cases.data")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    # Shadows the builtin in the modules that open dataset files (tests may run as root).
    monkeypatch.setattr(_file, "open", denied, raising=False)
    monkeypatch.setattr("agenteval.datasets._json.open", denied, raising=False)
    with pytest.raises(DatasetError) as info:
        list(dataset)
    assert str(info.value) == (
        "Cannot read dataset file 'cases.data': permission denied; make it readable by "
        "this user (chmod u+r)"
    )


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read any file"
)
def test_file_dataset_unreadable_file_for_real(write: Write) -> None:
    path = write("cases.json", "[]")
    path.chmod(0)
    try:
        with pytest.raises(DatasetError, match="permission denied"):
            list(JsonDataset("cases.json"))
    finally:
        path.chmod(0o644)


def test_file_dataset_other_os_error_is_an_error(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("cases.json", "[]")
    dataset = JsonDataset("cases.json")

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(_file, "open", broken, raising=False)
    with pytest.raises(DatasetError) as info:
        list(dataset)
    assert str(info.value) == (
        "Cannot read dataset file 'cases.json': Input/output error; check that it is a "
        "readable file"
    )


@pytest.mark.parametrize(("cls", "ext"), [(JsonDataset, "json"), (YamlDataset, "yaml")])
def test_file_dataset_invalid_utf8_names_line_and_column(
    write: Write, cls: type[JsonDataset], ext: str
) -> None:
    write(f"cases.{ext}", b'\xef\xbb\xbf[\n  {"input": "caf\xe9"}\n]\n')  # Latin-1 é
    with pytest.raises(DatasetError) as info:
        list(cls(f"cases.{ext}"))
    assert str(info.value) == (
        f"Dataset file 'cases.{ext}' is not valid UTF-8: byte 0xe9 at line 2, column 17; "
        "re-save the file as UTF-8"
    )


@pytest.mark.parametrize(("cls", "ext"), [(JsonDataset, "json"), (YamlDataset, "yaml")])
def test_file_dataset_utf16_is_named_as_such(
    write: Write, cls: type[JsonDataset], ext: str
) -> None:
    write(f"cases.{ext}", '[{"n": 1}]'.encode("utf-16"))
    with pytest.raises(DatasetError) as info:
        list(cls(f"cases.{ext}"))
    assert str(info.value) == (
        f"Dataset file 'cases.{ext}' is UTF-16, not UTF-8: re-save it as UTF-8"
    )


def test_file_dataset_keeps_reading_the_same_file_after_chdir(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("cases.json", '[{"n": 1}]')
    dataset = JsonDataset("cases.json")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert list(dataset) == [{"n": 1}]
    assert dataset.source == "cases.json"
    assert dataset.base_dir == tmp_path


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, ""),
        ("deep.jsonl", '{"input": 1}\n' + "[" * 100_000 + "]" * 100_000 + "\n", " (line 2)"),
        ("deep.yaml", "[" * 100_000 + "]" * 100_000, ""),
    ],
)
def test_a_file_nested_too_deeply_is_a_dataset_error_naming_it(
    write: Callable[[str, str], Path], name: str, text: str, where: str
) -> None:
    write(name, text)
    with pytest.raises(DatasetError) as error:
        list(load_dataset(name))
    assert str(error.value) == (
        f"Dataset file {name!r}{where} is nested too deeply to read (thousands of levels of "
        "lists or objects): flatten the data"
    )


def test_a_pipe_as_a_dataset_is_refused_rather_than_read_forever(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cases.json")
    with pytest.raises(DatasetError, match=r"is not a regular file \(a pipe or a device\)"):
        JsonDataset(tmp_path / "cases.json")


def test_yaml_aliases_that_expand_a_small_file_beyond_limits_are_refused(
    write: Callable[[str, str], Path],
) -> None:
    # "billion laughs": 7 levels of 10 aliases, a few hundred bytes, 10 million values
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, 8):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    write("laughs.yaml", "\n".join(lines) + "\ncases:\n  - input: *a7\n")
    with pytest.raises(DatasetError, match=r"through its aliases \(\*name\) than it writes out"):
        list(YamlDataset("laughs.yaml"))
    # a few aliases, as datasets use them (a shared context), are fine
    write("shared.yaml", "- input: &ctx {tone: polite}\n- input: *ctx\n- input: *ctx\n")
    assert len(list(YamlDataset("shared.yaml"))) == 3


BIG = "9" * 5000  # more digits than Python reads as an int (its limit: 4,300)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("big.json", f'[{{"input": 1}},\n {{"input": {BIG}}}]'),
        ("big.jsonl", f'{{"input": 1}}\n{{"input": {BIG}}}\n'),
        ("big.yaml", f"- input: 1\n- input: {BIG}\n"),
    ],
)
def test_a_number_too_long_for_python_is_a_dataset_error_naming_its_line(
    write: Callable[[str, str], Path], name: str, text: str
) -> None:
    write(name, text)
    with pytest.raises(DatasetError) as error:
        list(load_dataset(name))
    assert str(error.value) == (
        f"Dataset file {name!r} (line 2) holds a number of more than 4,300 digits, more than "
        "Python reads as an integer: write it as a string (in quotes)"
    )


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("- input: a\n  when: 2024-02-30\n", 2, "day is out of range for month"),
        ("- {input: a, when: 2024-13-01T10:00:00}\n", 1, "month must be in 1..12"),
        (
            "# renamed 2024-02-31\n- input: a\n  note: due 2024-02-31\n  when: 2024-02-30\n",
            4,
            "day is out of range for month",
        ),  # (text that only looks like a date is text)
        ("- input: a\n  at: 2024-01-01 25:00:00\n", 2, "hour must be in 0..23"),
    ],
)
def test_a_yaml_date_that_is_none_is_a_dataset_error_naming_its_line(
    write: Callable[[str, str], Path], text: str, line: int, why: str
) -> None:
    write("dates.yaml", text)
    with pytest.raises(DatasetError) as error:
        list(load_dataset("dates.yaml"))
    assert str(error.value) == (
        f"Dataset file 'dates.yaml' (line {line}) has a date that is not one ({why}): "
        "correct it, or quote it to keep it as text"
    )


def test_load_dataset_messages_show_a_path_inside_the_working_directory_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases.txt").write_text("[]")
    with pytest.raises(DatasetError, match=r"^Could not infer dataset format for 'cases.txt'"):
        load_dataset(tmp_path / "cases.txt")
    with pytest.raises(DatasetError, match=r"^Unknown dataset format 'csv' for 'cases.txt'"):
        load_dataset(tmp_path / "cases.txt", format="csv")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "text", "key", "line"),
    [
        (
            "two.json",
            '{"cases": [{"input": "x"}, {"input": "z"}],\n "cases": [{"input": "y"}]}',
            "cases",
            2,
        ),
        (
            "two.json",
            '[{"input": "a"},\n {"input": "a",\n  "reference": "a",\n  "reference": "b"}]',
            "reference",
            4,
        ),
        ("two.jsonl", '{"input": "a"}\n\n{"input": "a", "input": "b"}\n', "input", 3),
        ("two.yaml", "cases:\n  - input: x\ncases:\n  - input: y\n", "cases", 3),
        ("two.yaml", "- input: hello\n  reference: hello\n  reference: bye\n", "reference", 3),
        ("two.yaml", "- {input: a, 1: x, 1: y}\n", 1, 1),
    ],
)
def test_a_key_given_twice_in_one_mapping_is_a_dataset_error_naming_its_line(
    write: Callable[[str, str], Path], name: str, text: str, key: object, line: int
) -> None:
    # the reader kept the last silently: a first block of cases went missing
    write(name, text)
    with pytest.raises(DatasetError) as error:
        list(load_dataset(name))
    fix = (
        "merge them into one list"
        if key == "cases"
        else "keep one (a reader keeps only the last, silently)"
    )
    assert str(error.value) == (
        f"Dataset file {name!r} (line {line}) gives the key {key!r} twice in one mapping: {fix}"
    )


def test_a_yaml_merge_key_may_be_overridden(write: Callable[[str, str], Path]) -> None:
    write("merged.yaml", "- &base {input: a, reference: a}\n- <<: *base\n  reference: b\n")
    assert list(load_dataset("merged.yaml"))[1] == {"input": "a", "reference": "b"}
