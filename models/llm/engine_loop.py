"""Keep one engine busy: concurrent batches from several threads merged into one running vLLM engine.

A Ray actor that takes several batches at once (``PoolConfig.batches_in_flight``) runs each in its
own thread; each thread renders its prompts and then calls the engine. Called as today, the engine
would serve one ``LLM.generate`` at a time and sit idle while the next batch is rendered, parsed and
written. :class:`EngineLoop` instead owns the engine on one background thread that drives vLLM's
own request API - ``LLM.enqueue`` (the same prompt preprocessing ``LLM.generate`` does) and
``LLMEngine.step`` - and admits new requests between steps, so a batch that arrives while another
is running joins the running engine (continuous batching) instead of waiting for it to finish.

It is vLLM's async engine idea without its process boundary: vLLM 0.32's ``AsyncLLM`` always runs
the engine core in another process (``EngineCoreClient.make_client`` refuses asyncio without
multiprocessing), which on the CPU build costs a much slower start and two more processes on a
small machine; the in-process ``LLMEngine`` driven from one thread runs the very engine and
sampling settings the synchronous path uses (see docs/ray.md, "Engines kept busy").

:class:`LoopFrontend` is what the engine's callers see while the loop owns it: the
``generate(prompts, params, use_tqdm=...)`` call of ``vllm.LLM``, served by the loop, so code that
calls ``engine.llm.generate`` (the rubric scorer, claim extraction) needs no second path.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from rubric.errors import EngineError

__all__ = ["EngineLoop", "LoopFrontend", "RequestEngine", "VLLMRequestEngine"]

log = logging.getLogger(__name__)

#: Seconds the idle loop waits for a submission before checking whether it was closed.
_IDLE_WAIT_S = 0.05


class RequestEngine(Protocol):
    """The request-level engine API the loop drives (vLLM's, or a fake in tests). Single-threaded."""

    def enqueue(self, prompts: Sequence[Any], params: Sequence[Any]) -> list[str]:
        """Add one request per prompt; returns their request ids, in prompt order."""
        ...

    def step(self) -> list[Any]:
        """Run one engine step; returns outputs carrying ``request_id`` and ``finished``."""
        ...

    def has_unfinished_requests(self) -> bool: ...


class VLLMRequestEngine:
    """:class:`RequestEngine` over a ``vllm.LLM``: its public ``enqueue`` and its engine's ``step``."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def enqueue(self, prompts: Sequence[Any], params: Sequence[Any]) -> list[str]:
        # enqueue returns the engine's internal ids, "<external>-<8 random chars>"
        # (InputProcessor.assign_request_id); outputs carry the external one, the decimal number
        # LLM.request_counter gave the request.
        return [rid.split("-", 1)[0] for rid in self.llm.enqueue(list(prompts), list(params), use_tqdm=False)]

    def step(self) -> list[Any]:
        return list(self.llm.llm_engine.step())

    def has_unfinished_requests(self) -> bool:
        return bool(self.llm.llm_engine.has_unfinished_requests())


@dataclass
class _Submission:
    prompts: list[Any]
    params: list[Any]
    future: Future = field(default_factory=Future)
    outputs: list[Any] = field(default_factory=list)
    missing: int = 0


class EngineLoop:
    """One thread owning a :class:`RequestEngine`; :meth:`run` may be called from many threads at once.

    Each :meth:`run` call gets its own outputs back in its own input order, one per prompt, as a
    synchronous ``LLM.generate`` call would return them; while it waits, requests of other calls
    share the engine's steps. An engine failure fails every call in flight and every later one
    (a dead engine is not retried). :meth:`close` stops the thread; also a context manager.

    Args:
        engine: the request engine; after construction only the loop thread touches it.
        name: the thread's name (logs).
        start: start the thread now; False leaves it to :meth:`start` (submissions wait in a queue).
    """

    def __init__(self, engine: RequestEngine, *, name: str = "engine-loop", start: bool = True) -> None:
        self._engine = engine
        self._inbox: queue.Queue[_Submission] = queue.Queue()
        self._closed = threading.Event()
        # Guards "closed or failed?" + enqueueing against close/failure, so no call waits on a dead loop.
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._owner: dict[str, tuple[_Submission, int]] = {}
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        self._thread.start()

    def run(self, prompts: Sequence[Any], params: Sequence[Any]) -> list[Any]:
        """Serve ``prompts`` (one ``params`` each) on the shared engine; the finished outputs in input order.

        Raises:
            EngineError: the loop is closed, or the engine failed (now or earlier).
        """
        return self.submit(prompts, params).result()

    def submit(self, prompts: Sequence[Any], params: Sequence[Any]) -> Future:
        """Like :meth:`run` without waiting: a future of the outputs.

        Raises:
            EngineError: the loop is closed or has failed, or ``params`` does not match ``prompts``.
        """
        if len(params) != len(prompts):
            raise EngineError(f"{len(prompts)} prompts but {len(params)} sampling params")
        sub = _Submission(list(prompts), list(params))
        if not prompts:
            sub.future.set_result([])
            return sub.future
        with self._lock:
            if self._failure is not None:
                raise EngineError(f"the engine loop has failed: {self._failure}") from self._failure
            if self._closed.is_set():
                raise EngineError("the engine loop is closed")
            self._inbox.put(sub)
        return sub.future

    def close(self, timeout: float = 30.0) -> None:
        """Stop the loop after the requests in flight finish; calls still queued fail."""
        with self._lock:
            self._closed.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._fail_queued(EngineError("the engine loop is closed"))

    def __enter__(self) -> "EngineLoop":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the loop thread ---------------------------------------------------------------------------

    def _serve(self) -> None:
        # Ends when closed and the engine has nothing left to finish; each pass either steps the
        # engine or waits at most _IDLE_WAIT_S for work.
        try:
            while not (self._closed.is_set() and not self._engine.has_unfinished_requests()):
                busy = self._engine.has_unfinished_requests()
                self._admit(block=not busy)
                if self._engine.has_unfinished_requests():
                    for out in self._engine.step():
                        if out.finished:
                            self._deliver(out)
        except BaseException as e:  # the engine is dead: every caller hears it
            log.error("engine loop failed: %s: %s", type(e).__name__, e)
            with self._lock:
                self._failure = e
                self._closed.set()
            err = EngineError(f"vLLM engine step failed: {type(e).__name__}: {e}")
            for sub in {id(s): s for s, _ in self._owner.values()}.values():
                if not sub.future.done():
                    sub.future.set_exception(err)
            self._owner.clear()
            self._fail_queued(err)

    def _admit(self, *, block: bool) -> None:
        """Move every queued submission into the engine; wait briefly for one when the engine is idle."""
        for n in itertools.count():
            try:
                sub = self._inbox.get(block=block and n == 0, timeout=_IDLE_WAIT_S)
            except queue.Empty:
                return
            try:
                ids = self._engine.enqueue(sub.prompts, sub.params)
            except Exception as e:  # a bad submission (a prompt the engine refuses) fails only its caller
                sub.future.set_exception(EngineError(f"the engine refused a batch: {type(e).__name__}: {e}"))
                continue
            if len(ids) != len(sub.prompts) or len(set(ids)) != len(ids) or any(r in self._owner for r in ids):
                err = EngineError(f"engine returned request ids {ids} for {len(sub.prompts)} prompts")
                sub.future.set_exception(err)
                raise err
            sub.outputs = [None] * len(ids)
            sub.missing = len(ids)
            for i, rid in enumerate(ids):
                self._owner[rid] = (sub, i)

    def _deliver(self, out: Any) -> None:
        try:
            sub, i = self._owner.pop(out.request_id)
        except KeyError:
            raise EngineError(f"engine finished request {out.request_id!r}, which nobody sent") from None
        sub.outputs[i] = out
        sub.missing -= 1
        if sub.missing == 0:
            sub.future.set_result(sub.outputs)

    def _fail_queued(self, err: BaseException) -> None:
        for _ in range(self._inbox.qsize()):
            try:
                sub = self._inbox.get_nowait()
            except queue.Empty:
                return
            sub.future.set_exception(err)


class LoopFrontend:
    """The ``vllm.LLM.generate`` call, served by an :class:`EngineLoop` (safe from many threads).

    Args:
        llm: the ``vllm.LLM`` the loop drives; read-only attributes (``llm_engine`` configs) pass through.
        loop: the loop that owns ``llm``'s engine.
    """

    def __init__(self, llm: Any, loop: EngineLoop) -> None:
        self.llm_engine = llm.llm_engine
        self._loop = loop

    def generate(self, prompts: Sequence[Any], sampling_params: Any | Sequence[Any], *,
                 use_tqdm: bool = False) -> list[Any]:
        params = (list(sampling_params) if isinstance(sampling_params, (list, tuple))
                  else [sampling_params] * len(prompts))
        return self._loop.run(prompts, params)

    def reset_prefix_cache(self) -> None:
        raise EngineError("cannot reset the prefix cache while the engine loop owns the engine")
