"""The engine loop: concurrent batches share one engine; each gets its own outputs back, in its own order."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from models.llm.engine_loop import EngineLoop
from rubric.errors import EngineError


@dataclass
class _Out:
    request_id: str
    finished: bool
    value: str


class FakeEngine:
    """A request engine that serves at most ``per_step`` requests a step, newest first (out of order).

    ``steps`` records, per step, the batch tags of the requests that step served: the merge shows there.
    """

    def __init__(self, per_step: int = 3, fail_at_step: int | None = None) -> None:
        self.per_step = per_step
        self.fail_at_step = fail_at_step
        self.waiting: list[tuple[str, str]] = []
        self.steps: list[set[str]] = []
        self._next = 0

    def enqueue(self, prompts, params):
        ids = []
        for prompt, param in zip(prompts, params):
            rid = str(self._next)
            self._next += 1
            self.waiting.append((rid, f"{prompt}|{param}"))
            ids.append(rid)
        return ids

    def step(self):
        if self.fail_at_step is not None and len(self.steps) == self.fail_at_step:
            raise RuntimeError("engine core died")
        served, self.waiting = self.waiting[-self.per_step:], self.waiting[:-self.per_step]
        self.steps.append({v.split(":")[0] for _, v in served})
        # plus an unfinished output, as vLLM streams progress: the loop must not deliver it
        return [_Out(rid, True, v.upper()) for rid, v in reversed(served)] + [_Out("none", False, "")]

    def has_unfinished_requests(self):
        return bool(self.waiting)


def _batch(tag: str, n: int) -> tuple[list[str], list[str]]:
    return [f"{tag}:{i}" for i in range(n)], [f"p{i % 2}" for i in range(n)]


def test_queued_batches_share_steps_and_come_back_in_their_own_order():
    fake = FakeEngine(per_step=4)
    loop = EngineLoop(fake, start=False)
    batches = {tag: _batch(tag, n) for tag, n in (("a", 5), ("b", 3), ("c", 4))}
    futures = {tag: loop.submit(*b) for tag, b in batches.items()}
    loop.start()
    try:
        for tag, (prompts, params) in batches.items():
            got = futures[tag].result()
            assert [o.value for o in got] == [f"{p}|{q}".upper() for p, q in zip(prompts, params)]
    finally:
        loop.close()
    assert any(len(tags) > 1 for tags in fake.steps), fake.steps  # one step served several batches
    assert not fake.waiting


def test_concurrent_callers_each_get_one_output_per_input():
    fake = FakeEngine(per_step=5)
    batches = [_batch(f"t{i}", 1 + (i * 7) % 9) for i in range(12)]
    with EngineLoop(fake) as loop, ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda b: loop.run(*b), batches))
    for (prompts, params), got in zip(batches, results):
        assert len(got) == len(prompts)
        assert [o.value for o in got] == [f"{p}|{q}".upper() for p, q in zip(prompts, params)]


def test_an_engine_failure_fails_the_calls_in_flight_and_later_ones():
    fake = FakeEngine(per_step=1, fail_at_step=1)
    loop = EngineLoop(fake, start=False)
    pending = loop.submit(*_batch("a", 3))
    loop.start()
    with pytest.raises(EngineError, match="engine core died"):
        pending.result()
    with pytest.raises(EngineError, match="has failed"):
        loop.run(*_batch("b", 1))
    loop.close()


def test_closed_loop_refuses_work_and_empty_batches_need_no_engine():
    loop = EngineLoop(FakeEngine())
    assert loop.run([], []) == []
    with pytest.raises(EngineError, match="sampling params"):
        loop.run(["x"], [])
    loop.close()
    with pytest.raises(EngineError, match="closed"):
        loop.run(*_batch("a", 1))
