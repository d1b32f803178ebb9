from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agenteval import _cache_settings
from agenteval._cache_settings import (
    DB_NAME,
    CacheSettings,
    cache_settings,
    configure_cache,
    using_cache,
)
from agenteval._context import enter_item, exit_item
from agenteval._errors import ConfigError, ProviderUnavailableError
from agenteval._usage import Usage
from agenteval.llm import _cache
from agenteval.llm._cache import (
    acomplete_cached,
    clear_cache,
    complete_cached,
    embed_cached,
    request_key,
)
from agenteval.llm._types import EmbeddingsResult, ModelRequest, ModelResponse
from agenteval.testing._scripted import ScriptedModel
from agenteval.trajectory._messages import Message


@pytest.fixture(autouse=True)
def _pristine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings())
    yield
    _cache.close_connections()


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "cache"
    configure_cache(directory=directory)
    return directory


def cacheable_model(replies: Iterable[Any], name: str = "scripted:model") -> ScriptedModel:
    """A ScriptedModel that opts in to the cache (in-process doubles stay out by default)."""
    return ScriptedModel(replies, name=name, cacheable=True)


def req(text: str = "Grade this", **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=[Message.user(text)], **kwargs)


def reply(text: str = "ok", **kwargs: Any) -> ModelResponse:
    fields: dict[str, Any] = {"model": "m", **kwargs}
    return ModelResponse(text=text, usage=Usage(input_tokens=10, output_tokens=2), **fields)


class CountingEmbeddings:
    def __init__(self, name: str = "fake:embed") -> None:
        self.calls: list[list[str]] = []
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]


def test_cache_is_off_until_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = cacheable_model(["a", "b"])

    complete_cached(model, req())
    second = complete_cached(model, req())

    assert cache_settings().enabled is False
    assert (second.text, second.cached, len(model.requests)) == ("b", False, 2)
    assert list(tmp_path.iterdir()) == []


def test_configure_cache_defaults_to_agenteval_cache_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    configure_cache()
    complete_cached(cacheable_model(["a"]), req())

    assert cache_settings().enabled is True
    assert cache_settings().directory == tmp_path / ".agenteval" / "cache"
    assert (tmp_path / ".agenteval" / "cache" / DB_NAME).is_file()
    assert (tmp_path / ".agenteval" / "cache" / ".gitignore").read_text() == (
        "# agenteval response cache\n*\n"
    )


def test_complete_cached_hit_makes_no_call_and_is_marked_cached(cache_dir: Path) -> None:
    model = cacheable_model([reply("first", retries=3)])

    miss = complete_cached(model, req())
    hit = complete_cached(model, req())

    assert (miss.text, miss.cached, miss.retries) == ("first", False, 3)
    assert (hit.text, hit.cached, hit.retries) == ("first", True, 0)
    assert hit.usage == Usage(input_tokens=10, output_tokens=2)
    assert len(model.requests) == 1


def test_complete_cached_key_covers_the_model_name_and_the_whole_request(cache_dir: Path) -> None:
    a = cacheable_model(["a1", "a2", "a3"], name="p:a")
    b = cacheable_model(["b1"], name="p:b")

    complete_cached(a, req())
    complete_cached(a, req(temperature=0.5))
    complete_cached(a, req(system="Be strict."))
    other = complete_cached(b, req())

    assert (len(a.requests), other.text, other.cached) == (3, "b1", False)
    assert request_key("p:a", req()) == request_key("p:a", req())
    assert request_key("p:a", req()) != request_key("p:b", req())


def test_complete_cached_stores_only_validated_responses(cache_dir: Path) -> None:
    model = cacheable_model(["bad", "good", "unused"])

    def valid(r: ModelResponse) -> bool:
        return r.text == "good"

    first = complete_cached(model, req(), valid)
    second = complete_cached(model, req(), valid)
    third = complete_cached(model, req(), valid)

    assert [first.text, second.text, third.text] == ["bad", "good", "good"]
    assert [first.cached, second.cached, third.cached] == [False, False, True]
    assert model.remaining == 1


def test_complete_cached_never_writes_a_reply_holding_a_secret_to_disk(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUPPORT_API_KEY", "sk-live-0123456789abcdef")
    model = cacheable_model(["echoed sk-live-0123456789abcdef", "again sk-live-0123456789abcdef"])

    first = complete_cached(model, req())
    second = complete_cached(model, req())  # asked again: nothing was stored

    assert (first.cached, second.cached, len(model.requests)) == (False, False, 2)
    _cache.close_connections()
    stored = b"".join(p.read_bytes() for p in cache_dir.rglob("*") if p.is_file())
    assert b"sk-live-0123456789abcdef" not in stored


def test_complete_cached_ignores_a_stored_response_the_validator_now_rejects(
    cache_dir: Path,
) -> None:
    model = cacheable_model(["old", "new"])
    complete_cached(model, req())

    response = complete_cached(model, req(), lambda r: r.text != "old")

    assert (response.text, response.cached) == ("new", False)


def test_complete_cached_disabled_always_calls_and_writes_nothing(tmp_path: Path) -> None:
    configure_cache(enabled=False, directory=tmp_path / "cache")
    model = cacheable_model(["a", "b"])

    complete_cached(model, req())
    complete_cached(model, req())

    assert len(model.requests) == 2
    assert not (tmp_path / "cache").exists()


def test_acomplete_cached_hit_makes_no_call(cache_dir: Path) -> None:
    model = cacheable_model(["async reply"])

    async def twice() -> tuple[ModelResponse, ModelResponse]:
        return await acomplete_cached(model, req()), await acomplete_cached(model, req())

    miss, hit = asyncio.run(twice())

    assert (miss.cached, hit.cached, hit.text, len(model.requests)) == (
        False,
        True,
        "async reply",
        1,
    )


def test_complete_cached_accounts_calls_to_the_running_item(cache_dir: Path) -> None:
    model = cacheable_model([reply("x", retries=2)])
    ctx, token = enter_item()
    try:
        complete_cached(model, req())
        complete_cached(model, req())
    finally:
        exit_item(token)

    assert (ctx.judge_calls, ctx.cached_calls, ctx.retries) == (2, 1, 2)
    assert ctx.judge_usage == Usage(input_tokens=10, output_tokens=2)


def test_clear_cache_removes_every_entry_and_counts_them(cache_dir: Path) -> None:
    model = cacheable_model(["a", "b", "c"])
    complete_cached(model, req("one"))
    complete_cached(model, req("two"))
    embed_cached(CountingEmbeddings(), ["x", "y"])

    assert clear_cache() == 4
    assert clear_cache(cache_dir) == 0
    assert complete_cached(model, req("one")).text == "c"


def test_clear_cache_without_a_cache_removes_nothing(tmp_path: Path) -> None:
    assert clear_cache(tmp_path / "nowhere") == 0
    assert not (tmp_path / "nowhere").exists()


def test_clear_cache_removes_a_damaged_cache_file(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_bytes(b"this is not a database" * 100)
    (tmp_path / "mine.txt").write_text("kept")

    assert clear_cache(tmp_path) is None
    assert not (tmp_path / DB_NAME).exists() and (tmp_path / "mine.txt").read_text() == "kept"
    assert clear_cache(tmp_path) == 0


def test_clear_cache_of_a_cache_in_use_keeps_it_and_says_so(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # locked (or read-only) is no damage: the file was deleted under the process using it
    complete_cached(cacheable_model(["a"]), req("one"))
    _cache._close_all()
    monkeypatch.setattr(_cache, "_BUSY_TIMEOUT_S", 0.1)
    other = sqlite3.connect(cache_dir / DB_NAME, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ConfigError) as error:
            clear_cache()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert str(error.value) == (
        f"Could not clear the response cache {str(cache_dir / DB_NAME)!r}: database is "
        "locked; another process (a run still going?) is using it: clear it once that ends"
    )
    assert clear_cache() == 1  # it was kept, whole


def test_clear_cache_of_what_is_not_a_cache_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is a file, not a cache folder: check --dir"):
        clear_cache(tmp_path / "notes.txt")
    (tmp_path / DB_NAME).mkdir()
    with pytest.raises(ConfigError, match="is not agenteval's cache file: remove it by hand"):
        clear_cache(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_clear_cache_of_a_file_in_the_default_place_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".agenteval").mkdir()
    (tmp_path / ".agenteval" / "cache").write_text("mine")
    with pytest.raises(ConfigError) as error:
        clear_cache()
    assert str(error.value) == (
        "'.agenteval/cache' is a file, not a cache folder: move the file away, or pass --dir"
    )


def test_a_damaged_cache_is_set_aside_and_a_new_one_started(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # (one restored from an earlier CI job, cut short): every call of every run bypassed
    # it, paying for every judge call again, until someone ran `cache clear`
    (tmp_path / DB_NAME).write_bytes(b"this is not a database" * 100)
    configure_cache(directory=tmp_path)
    model = cacheable_model(["a", "b"])

    with caplog.at_level(logging.WARNING, logger="agenteval.cache"):
        first = complete_cached(model, req())
        second = complete_cached(model, req())  # (the new cache has the first reply)

    assert (first.text, second.text) == ("a", "a")
    assert (tmp_path / f"{DB_NAME}.damaged").read_bytes().startswith(b"this is not a database")
    assert caplog.text.count("was damaged (file is not a database): set aside as ") == 1


def test_embed_cached_embeds_only_the_missing_texts_in_one_call(cache_dir: Path) -> None:
    embeddings = CountingEmbeddings()

    first = embed_cached(embeddings, ["alpha", "be"])
    second = embed_cached(embeddings, ["be", "gamma!", "alpha"])
    third = embed_cached(embeddings, ["alpha"])

    assert first == [[5.0, 1.0], [2.0, 1.0]]
    assert second == [[2.0, 1.0], [6.0, 1.0], [5.0, 1.0]]
    assert third == [[5.0, 1.0]]
    assert embeddings.calls == [["alpha", "be"], ["gamma!"]]


def test_embed_cached_key_covers_the_embeddings_name(cache_dir: Path) -> None:
    small, large = CountingEmbeddings("p:small"), CountingEmbeddings("p:large")

    embed_cached(small, ["text"])
    embed_cached(large, ["text"])

    assert (small.calls, large.calls) == ([["text"]], [["text"]])


def test_embed_cached_accounts_one_call_per_batch(cache_dir: Path) -> None:
    embeddings = CountingEmbeddings()
    ctx, token = enter_item()
    try:
        embed_cached(embeddings, ["a", "b"])
        embed_cached(embeddings, ["a"])
        assert embed_cached(embeddings, []) == []
    finally:
        exit_item(token)

    assert (ctx.judge_calls, ctx.cached_calls) == (2, 1)


def test_embed_cached_rejects_a_wrong_number_of_vectors() -> None:
    class Short(CountingEmbeddings):
        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0]]

    with pytest.raises(ValueError) as excinfo:
        embed_cached(Short(), ["a", "b"])

    assert str(excinfo.value) == (
        "Embeddings 'fake:embed' returned 1 vectors for 2 texts; embed() must return one "
        "vector (a list of numbers) per text"
    )


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (None, "returned NoneType for 1 texts; embed() must return one vector"),
        ([[[1.0, 2.0]]], "returned a vector that is not a flat list of numbers: [[1.0, 2.0]]"),
    ],
)
def test_embed_cached_rejects_what_is_no_list_of_vectors(returned: Any, message: str) -> None:
    class Broken(CountingEmbeddings):
        def embed(self, texts: list[str]) -> Any:
            return returned

    with pytest.raises(ValueError) as excinfo:
        embed_cached(Broken(), ["a"])
    assert str(excinfo.value).startswith(f"Embeddings 'fake:embed' {message}")


def _echo(request: ModelRequest) -> str:
    return f"reply to {request.messages[0].content}"


def _writer(directory: str, worker: int, count: int) -> None:
    configure_cache(directory=directory)
    model = cacheable_model([_echo] * (2 * count))
    for i in range(count):
        complete_cached(model, req(f"worker {worker} request {i}"))
        complete_cached(model, req(f"shared request {i}"))
    for i in range(count):
        for text in (f"worker {worker} request {i}", f"shared request {i}"):
            hit = complete_cached(model, req(text))
            if not hit.cached or hit.text != f"reply to {text}":
                raise SystemExit(3)


def test_cache_survives_several_processes_writing_at_once(tmp_path: Path) -> None:
    # The parent uses the cache before forking, as the runner's supervisor may.
    configure_cache(directory=tmp_path)
    complete_cached(cacheable_model(["parent"]), req("parent request"))
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(str(tmp_path), n, 25)) for n in range(4)]

    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)

    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert (rows, mode) == (1 + 4 * 25 + 25, "wal")
    assert complete_cached(cacheable_model([]), req("parent request")).text == "parent"


def test_cache_closes_its_connections_before_a_fork(tmp_path: Path) -> None:
    configure_cache(directory=tmp_path)
    complete_cached(cacheable_model(["a"]), req())
    assert len(_cache._connections) == 1

    pid = os.fork()
    if pid == 0:  # the child: nothing inherited, and the cache still works
        ok = not _cache._connections and complete_cached(cacheable_model([]), req()).cached
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert _cache._connections == {}
    assert complete_cached(cacheable_model([]), req()).cached


def test_cache_never_reuses_a_connection_from_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_cache(directory=tmp_path)
    complete_cached(cacheable_model(["a"]), req())
    inherited = _cache._connections[tmp_path / DB_NAME]
    monkeypatch.setattr(_cache, "_pid", -1)  # as if forked behind os.fork's back

    hit = complete_cached(cacheable_model([]), req())

    assert hit.cached
    assert _cache._connections[tmp_path / DB_NAME] is not inherited
    assert _cache._abandoned[-1] is inherited
    _cache._abandoned.remove(inherited)
    inherited.close()


def test_using_cache_restores_the_previous_settings(tmp_path: Path) -> None:
    model = cacheable_model(["a", "b"])

    with using_cache(directory=tmp_path) as settings:
        complete_cached(model, req())
        hit = complete_cached(model, req())
    after = complete_cached(model, req())

    assert (settings.enabled, settings.directory) == (True, tmp_path)
    assert (hit.cached, after.cached, after.text) == (True, False, "b")
    assert cache_settings() == CacheSettings()


def test_complete_cached_never_caches_a_model_that_is_not_cacheable(cache_dir: Path) -> None:
    # A ScriptedModel's script is not part of the key: a changed script must not be
    # answered with the old script's reply.
    complete_cached(ScriptedModel(["old verdict"]), req())

    again = complete_cached(ScriptedModel(["new verdict"]), req())

    assert (again.text, again.cached) == ("new verdict", False)
    assert not (cache_dir / DB_NAME).exists()


def test_acomplete_cached_never_caches_a_model_that_is_not_cacheable(cache_dir: Path) -> None:
    async def both() -> tuple[ModelResponse, ModelResponse]:
        first = await acomplete_cached(ScriptedModel(["old"]), req())
        return first, await acomplete_cached(ScriptedModel(["new"]), req())

    first, again = asyncio.run(both())

    assert (first.text, again.text, again.cached) == ("old", "new", False)
    assert not (cache_dir / DB_NAME).exists()


def test_embed_cached_never_caches_embeddings_that_are_not_cacheable(cache_dir: Path) -> None:
    embeddings = CountingEmbeddings()
    embeddings.cacheable = False  # type: ignore[attr-defined]

    embed_cached(embeddings, ["alpha"])
    embed_cached(embeddings, ["alpha"])

    assert embeddings.calls == [["alpha"], ["alpha"]]
    assert not (cache_dir / DB_NAME).exists()


def test_complete_cached_accounts_usage_under_the_configured_model_name(
    cache_dir: Path,
) -> None:
    # The provider answers with a dated snapshot name; prices are keyed by the configured one.
    model = cacheable_model(
        [reply("x", model="claude-3-5-haiku-20241022")],
        name="anthropic:claude-3-5-haiku-latest",
    )
    ctx, token = enter_item()
    try:
        complete_cached(model, req())
    finally:
        exit_item(token)

    assert ctx.judge_by_model == {
        "anthropic:claude-3-5-haiku-latest": Usage(input_tokens=10, output_tokens=2)
    }


class FailingModel:
    """A model whose every call fails for good after ``retries`` retries."""

    name = "fake:failing"

    def __init__(self, retries: int) -> None:
        self.retries = retries

    def _error(self) -> ProviderUnavailableError:
        error = ProviderUnavailableError("fake:failing still failing")
        error.retries = self.retries
        return error

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise self._error()

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        raise self._error()


def test_complete_cached_accounts_the_retries_of_a_failed_call(cache_dir: Path) -> None:
    ctx, token = enter_item()
    try:
        with pytest.raises(ProviderUnavailableError):
            complete_cached(FailingModel(retries=4), req())
        with pytest.raises(ProviderUnavailableError):
            asyncio.run(acomplete_cached(FailingModel(retries=2), req()))
    finally:
        exit_item(token)

    assert (ctx.judge_calls, ctx.cached_calls, ctx.retries) == (2, 0, 6)
    assert (ctx.judge_usage, ctx.judge_by_model) == (Usage(), {})


class ReportingEmbeddings(CountingEmbeddings):
    """Embeddings that report their usage and retries, as OpenAIEmbeddings does."""

    def __init__(self, retries: int = 0, fail: bool = False) -> None:
        super().__init__("fake:reporting")
        self.retries = retries
        self.fail = fail

    def embed_with_usage(self, texts: list[str]) -> EmbeddingsResult:
        if self.fail:
            error = ProviderUnavailableError("fake:reporting still failing")
            error.retries = self.retries
            raise error
        usage = Usage(input_tokens=sum(len(t) for t in texts))
        return EmbeddingsResult(self.embed(texts), usage, self.retries)


def test_embed_cached_accounts_usage_and_retries_of_embeddings_that_report_them(
    cache_dir: Path,
) -> None:
    ctx, token = enter_item()
    try:
        embed_cached(ReportingEmbeddings(retries=1), ["alpha", "be"])
        with pytest.raises(ProviderUnavailableError):
            embed_cached(ReportingEmbeddings(retries=3, fail=True), ["gamma"])
    finally:
        exit_item(token)

    assert (ctx.judge_calls, ctx.retries) == (2, 4)
    assert ctx.judge_by_model == {"fake:reporting": Usage(input_tokens=7)}


def test_run_evaluations_keeps_the_folder_configure_cache_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the run put its cache in ./.agenteval/cache whatever configure_cache had said
    from agenteval import BaseEvaluator, run_evaluations
    from agenteval.judges import CorrectnessJudge

    monkeypatch.chdir(tmp_path)
    configure_cache(directory=tmp_path / "mine")
    model = cacheable_model(['{"reasoning": "ok", "score": 1}'])

    class Judged(BaseEvaluator):
        def get_dataset(self) -> list[dict[str, str]]:
            return [{"id": "a"}]

        def run(self, item: dict[str, str]) -> str:
            return "Paris"

        def evaluate(self, output: str, item: dict[str, str]) -> None:
            self.assert_that(CorrectnessJudge(model, expected="Paris"), output)

    assert run_evaluations([Judged], journal=False, outputs=[]).exit_code == 0
    assert (tmp_path / "mine" / DB_NAME).is_file()
    assert not (tmp_path / ".agenteval").exists()
    assert cache_settings().directory == tmp_path / "mine"  # (and it stays so after)
