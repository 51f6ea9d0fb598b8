"""LINKAGE's reference lists written by the LLM from one golden answer, with a per-question cache.

:class:`ReferenceGenerator` renders ``linkage.create_multi_step_answer.v1`` (or ``v2``, pre-filled with
``Answer1:``; the text is then read after the pre-fill) for each (question, golden answer), generates greedily with a bounded number of new tokens (one ``engine.generate`` call for all
the questions not cached) and reads the text with
:func:`rubric.protocols.linkage_references.parse_generated_references`.

:class:`ReferenceCache` is a JSONL file (the LINKAGE job keeps it as ``OUT/generated_references.jsonl``):
one line per generation with its key (:func:`rubric.protocols.linkage_references.generation_key`: question id,
golden answer sha256, template version and hash, backend, model id and revision, max tokens,
temperature) and the raw text, failed parses included (greedy decoding would write them again). A
changed input, template, model or setting is another key and is generated again; a resumed job reads
the text back and generates nothing. A torn last line (a killed job) is skipped and written again.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from models.llm import Engine, TextSampler
from rubric.config import check_range
from rubric.errors import ConfigError, EngineError, RubricError
from rubric.protocols import (
    CREATE_REFERENCES_VERSION, CREATE_REFERENCES_VERSIONS, GeneratedReferences, create_references_prompt,
    generated_text, generation_key, golden_sha256, parse_generated_references,
)
from rubric.protocols import REFERENCE_MAX_TOKENS, REFERENCE_MAX_TOKENS_LIMIT, get_protocol_template

__all__ = ["ReferenceRequest", "ReferenceResult", "ReferenceCache",
           "ReferenceGenerator"]

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class ReferenceRequest:
    """One question to write a reference list for."""

    question_id: str
    question: str
    golden: str


@dataclass(frozen=True)
class ReferenceResult:
    """A request's reference list (golden answer first) or its error, and whether it came from the cache.

    Attributes:
        references: best first; empty when ``error`` is set.
        error: why there is no list (names the question).
        text: the raw generation ("" when the prompt never reached the engine).
        cached: read back from the cache, not generated now.
    """

    references: tuple[str, ...]
    error: str | None
    text: str
    cached: bool


class ReferenceCache:
    """The generations of one job, keyed by :func:`rubric.protocols.linkage_references.generation_key` (module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._rows: dict[str, dict] = {}
        self.torn = 0
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    self._rows[row["key"]] = row
                except (json.JSONDecodeError, KeyError, TypeError):
                    self.torn += 1
            if self.torn:
                log.warning("%s: %d unreadable line(s) skipped; those questions are generated again",
                            self.path, self.torn)

    def get(self, key: str) -> dict | None:
        return self._rows.get(key)

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, rows: Sequence[dict]) -> None:
        """Append rows (each with ``key`` and ``text``) and flush them to disk before returning."""
        if not rows:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # never through a link: the temp file is created exclusively, the cache opened without following one
        if self.torn:  # rewrite without the torn lines before appending to them
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self._rows.values())
            tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "w",
                           encoding="utf-8") as f:
                f.write(data)
            os.replace(tmp, self.path)
            self.torn = 0
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
                self._rows[r["key"]] = r
            f.flush()
            os.fsync(f.fileno())


class ReferenceGenerator:
    """Writes LINKAGE reference lists with ``engine.generate`` (greedy, at most ``max_tokens`` new tokens).

    Args:
        engine: a loaded engine that can generate text.
        max_tokens: the cap on new tokens per generation.
        n_answers: labelled answers a generation must hold (the prompt asks for 3).
        version: the prompt, one of ``rubric.protocols.linkage_references.CREATE_REFERENCES_VERSIONS``.

    Raises:
        ConfigError: the engine cannot generate, or a setting is out of range.
    """

    def __init__(self, engine: Engine, *, max_tokens: int = REFERENCE_MAX_TOKENS, n_answers: int = 3,
                 version: str = CREATE_REFERENCES_VERSION) -> None:
        if version not in CREATE_REFERENCES_VERSIONS:
            raise ConfigError(f"unknown reference generation template {version!r}; known: "
                              f"{', '.join(CREATE_REFERENCES_VERSIONS)}")
        if not isinstance(engine, TextSampler):
            raise ConfigError(f"{type(engine).__name__} cannot generate text, which generated references need")
        check_range("max_tokens", max_tokens, low=1, high=REFERENCE_MAX_TOKENS_LIMIT, integer=True)
        self.engine = engine
        self.max_tokens = max_tokens
        self.n_answers = n_answers
        self.version = version
        self.last_generated = 0

    def settings(self) -> dict:
        """Everything that changes the generated text: part of every cache key."""
        t = get_protocol_template(self.version)
        return {"template": t.version, "template_hash": t.template_hash, "backend": self.engine.backend,
                "model_id": self.engine.model_id, "model_revision": self.engine.revision,
                "max_tokens": self.max_tokens, "temperature": 0.0, "n_answers": self.n_answers}

    def references(self, requests: Sequence[ReferenceRequest], cache: ReferenceCache | None = None
                   ) -> list[ReferenceResult]:
        """One result per request, in order: cached texts are read back, the rest generated in one call.

        Raises:
            EngineError: the engine failed as a whole (nothing of this call is cached).
        """
        settings = self.settings()
        keys = [generation_key(r.question_id, r.golden, settings) for r in requests]
        texts: dict[int, tuple[str, bool]] = {}
        errors: dict[int, str] = {}
        todo: list[int] = []
        for i, (r, k) in enumerate(zip(requests, keys)):
            row = cache.get(k) if cache is not None else None
            if row is not None:
                texts[i] = (row["text"], True)
            else:
                todo.append(i)
        prompts = {}
        for i in todo:
            try:
                prompts[i] = create_references_prompt(requests[i].question, requests[i].golden, version=self.version)
            except ConfigError as e:
                errors[i] = f"question {requests[i].question[:60]!r}: no reference list: {e}"
        live = [i for i in todo if i in prompts]
        if live:
            limit = self.engine.max_context - self.max_tokens
            counts = self.engine.count_tokens([prompts[i] for i in live])
            fits = []
            for i, n in zip(live, counts):
                if n > limit:
                    errors[i] = (f"question {requests[i].question[:60]!r}: the {self.version} prompt has "
                                 f"{n} tokens, over the {limit} the context leaves for {self.max_tokens} new tokens")
                else:
                    fits.append(i)
            live = fits
        self.last_generated = len(live)
        if live:
            try:
                got = self.engine.generate([prompts[i] for i in live], self.max_tokens,  # type: ignore[attr-defined]
                                           temperature=0.0)
            except RubricError:
                raise
            except Exception as e:  # a dead engine is one error for the job, never a row's
                raise EngineError(f"{self.engine.backend} engine failed generating {len(live)} reference lists: "
                                  f"{e}") from e
            if len(got) != len(live) or not all(isinstance(g, str) for g in got):
                raise EngineError(f"{self.engine.backend} engine returned {len(got)} texts for {len(live)} prompts")
            rows = []
            for i, g in zip(live, got):
                texts[i] = (g, False)
                r = requests[i]
                rows.append({"key": keys[i], "question_id": r.question_id, "question": r.question,
                             "golden_sha256": golden_sha256(r.golden), **settings, "text": g})
            if cache is not None:
                cache.add(rows)
        out = []
        for i, r in enumerate(requests):
            if i in errors:
                out.append(ReferenceResult((), errors[i], "", False))
                continue
            text, cached = texts[i]
            parsed: GeneratedReferences = parse_generated_references(generated_text(text, self.version), r.golden,
                                                                     question=r.question, n_answers=self.n_answers)
            out.append(ReferenceResult(parsed.references, parsed.error, text, cached))
        return out
