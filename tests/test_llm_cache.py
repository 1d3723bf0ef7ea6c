"""The SQLite response cache: keys, modes, replay, several writer processes, broken files."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from pydantic import BaseModel

from pos_agent.llm import (
    Message,
    ModelFailure,
    ModelOptions,
    ResponseCache,
    ScriptedModel,
    Usage,
)
from pos_agent.llm.backend import BackendError, CachedOutcome, CacheRequest, cache_key

ASK = [Message("user", "Where is the mug?")]


class Where(BaseModel):
    place: str


def key_of(**overrides: object) -> str:
    fields: dict[str, object] = {
        "backend": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:1/v1",
        "messages": ASK,
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "max_tokens": 64,
        "temperature": 0.0,
        "seed": 0,
        "max_repairs": 2,
    }
    fields.update(overrides)
    return cache_key(**fields)  # type: ignore[arg-type]


def test_key_is_stable_and_canonical() -> None:
    assert key_of() == key_of()
    reordered = {"properties": {"a": {"type": "string"}}, "type": "object"}
    assert key_of(schema=reordered) == key_of()
    assert len(key_of()) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"backend": "local"},
        {"model": "other"},
        {"base_url": "http://127.0.0.1:2/v1"},
        {"messages": [Message("user", "Where is the cup?")]},
        {"messages": [Message("system", "Where is the mug?")]},
        {"schema": None},
        {"max_tokens": 65},
        {"temperature": 0.5},
        {"seed": 1},
        {"max_repairs": 0},
    ],
)
def test_every_request_field_changes_the_key(change: dict[str, object]) -> None:
    assert key_of(**change) != key_of()


def model_with(cache: ResponseCache, replies: list[object]) -> ScriptedModel:
    return ScriptedModel(replies, cache=cache, sleep=lambda _: None)  # type: ignore[arg-type]


def test_replay_returns_identical_outputs_marked_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite", "readwrite")
    first = model_with(cache, ["junk", '{"place": "sink"}']).complete(ASK, schema=Where)
    replay_model = model_with(cache, [])
    second = replay_model.complete(ASK, schema=Where)
    assert replay_model.requests == []
    assert second.cached and not first.cached
    assert (second.text, second.parsed, second.usage, second.repairs) == (
        first.text,
        first.parsed,
        first.usage,
        first.repairs,
    )
    assert cache.count() == 1


def test_output_failures_are_replayed_too(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    options = ModelOptions(max_repairs=0)
    recorder = ScriptedModel(["nonsense"], options=options, cache=cache)
    with pytest.raises(ModelFailure) as recorded:
        recorder.complete(ASK, schema=Where)
    replayer = ScriptedModel([], options=options, cache=cache)
    with pytest.raises(ModelFailure) as replayed:
        replayer.complete(ASK, schema=Where)
    assert replayed.value.cached
    assert (replayed.value.kind, replayed.value.last_text, replayed.value.usage) == (
        recorded.value.kind,
        recorded.value.last_text,
        recorded.value.usage,
    )


def test_transport_failures_are_not_recorded(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = ScriptedModel(
        [BackendError("transport", "down", retryable=False)], cache=cache, sleep=lambda _: None
    )
    with pytest.raises(ModelFailure):
        model.complete(ASK)
    assert cache.count() == 0


def test_modes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    model_with(ResponseCache(path, "write"), ["one"]).complete(ASK)
    # write: always calls the backend and overwrites.
    writer = model_with(ResponseCache(path, "write"), ["two"])
    assert writer.complete(ASK).text == "two" and len(writer.requests) == 1
    # read: replays hits, never stores misses.
    reader = model_with(ResponseCache(path, "read"), [])
    assert reader.complete(ASK).text == "two"
    miss_reader = model_with(ResponseCache(path, "read"), ["fresh"])
    assert miss_reader.complete([Message("user", "new")]).text == "fresh"
    assert ResponseCache(path).count() == 1
    # off: neither.
    off = model_with(ResponseCache(path, "off"), ["live"])
    assert off.complete(ASK).text == "live"
    assert ResponseCache(path).count() == 1


def test_read_mode_does_not_create_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.sqlite"
    model_with(ResponseCache(path, "read"), ["x"]).complete(ASK)
    assert not path.exists()


def test_options_configure_the_cache(tmp_path: Path) -> None:
    options = ModelOptions(cache_path=tmp_path / "o.sqlite", cache_mode="readwrite")
    ScriptedModel(["a"], options=options).complete(ASK)
    assert ScriptedModel([], options=options).complete(ASK).cached


def test_a_corrupt_cache_file_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    model = model_with(ResponseCache(path), ["still works"])
    answer = model.complete(ASK)
    assert answer.text == "still works" and not answer.cached


def _write_many(path: str, worker: int, count: int) -> None:
    cache = ResponseCache(path, "readwrite")
    for i in range(count):
        request = CacheRequest(
            "scripted", "m", None, (Message("user", f"{worker}-{i}"),), None, 8, 0.0, 0, 2
        )
        cache.put(request, CachedOutcome(f"reply {worker}-{i}", None, Usage(1, 1), 0, 1, 0.01))
        assert cache.get(request.key()) is not None
    cache.close()


def test_several_processes_write_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    workers, per_worker = 6, 40
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_write_many, args=(path, w, per_worker)) for w in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * workers
    cache = ResponseCache(path)
    assert cache.count() == workers * per_worker
    request = CacheRequest("scripted", "m", None, (Message("user", "3-7"),), None, 8, 0.0, 0, 2)
    hit = cache.get(request.key())
    assert hit is not None and hit.text == "reply 3-7"


def test_cache_survives_pickling_for_worker_processes(tmp_path: Path) -> None:
    import pickle

    cache = ResponseCache(tmp_path / "c.sqlite")
    model_with(cache, ["x"]).complete(ASK)
    clone = pickle.loads(pickle.dumps(cache))
    assert clone.count() == 1 and repr(clone) == repr(cache)


def _write_through(cache: ResponseCache, worker: int, count: int) -> None:
    model = ScriptedModel(lambda request: f"w{worker}", cache=cache)
    for i in range(count):
        model.complete([Message("user", f"{worker}/{i}")])


def test_forked_workers_reopen_an_inherited_connection(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "forked.sqlite")
    model_with(cache, ["parent"]).complete(ASK)  # the parent holds an open connection
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_write_through, args=(cache, w, 25)) for w in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * 4
    assert cache.count() == 1 + 4 * 25
