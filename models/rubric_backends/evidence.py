"""Evidence for the claim checker: attached documents, a local BM25 corpus, or web search.

Every source answers ``retrieve(claims, item, k) -> list[list[str]]``: for each claim, up to ``k``
evidence passages, best first (an empty list when there is none). Retrieval from a corpus or the
web is cached on disk as JSON, keyed by a hash of (corpus fingerprint, claim, k), so a re-run
neither re-ranks nor pays for searches again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rubric.config import check_range
from rubric.errors import BackendUnavailableError, ConfigError, EngineError, InputError
from rubric.io import AnswerItem

__all__ = [
    "EvidenceSource",
    "tokenize",
    "split_passages",
    "RetrievalCache",
    "AttachedDocs",
    "BM25Corpus",
    "SerperSearch",
    "serper_snippets",
]

log = logging.getLogger(__name__)

# Bump when tokenisation or passage splitting changes: it is part of every cache key.
_TOKENIZER_VERSION = "words-lower-v1"
_WORD = re.compile(r"[^\W_]+")


@runtime_checkable
class EvidenceSource(Protocol):
    """Where a claim's evidence comes from.

    Attributes:
        name: recorded on each output row (``attached``, ``bm25:<fingerprint>``, ``serper``).
    """

    name: str

    def retrieve(self, claims: Sequence[str], item: AnswerItem, k: int) -> list[list[str]]:
        """Up to ``k`` passages per claim, best first; one list per claim, in order."""
        ...


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits), the BM25 vocabulary."""
    return _WORD.findall(text.casefold())


def split_passages(docs: Iterable[str], passage_words: int = 120) -> list[str]:
    """Split documents into passages: paragraphs, and paragraphs longer than ``passage_words`` words
    into consecutive chunks of that many words. Empty documents give nothing.

    Raises:
        ConfigError: ``passage_words`` < 1.
    """
    check_range("passage_words", passage_words, low=1)
    out: list[str] = []
    for doc in docs:
        if not isinstance(doc, str):
            continue
        for para in re.split(r"\n\s*\n", doc):
            words = para.split()
            for start in range(0, len(words), passage_words):
                out.append(" ".join(words[start:start + passage_words]))
    return out


def _check_k(k: int) -> None:
    check_range("k", k, low=1)


@functools.cache
def _bm25_class() -> type:
    """``rank_bm25.BM25Okapi`` with Lucene's IDF, ``log(1 + (N - df + 0.5) / (df + 0.5))``, imported once.

    Okapi's own IDF, ``log((N - df + 0.5) / (df + 0.5))``, is zero or negative for a term in half
    the documents or more; rank_bm25 floors it at a fraction of the *average* IDF, which is itself
    negative on a handful of passages (an answer's attached documents), so matching a word could
    lower a passage's score. Lucene's IDF (also Pyserini's and Elasticsearch's) is always positive:
    a passage scores > 0 exactly when it shares a term with the query, and on large corpora the
    ranking is the same as Okapi's.

    Evidence sources call this in their constructors, so a missing ``rank_bm25`` fails the
    factuality backend when it is built, never once per answer.

    Raises:
        BackendUnavailableError: rank_bm25 is not installed.
    """
    try:
        from rank_bm25 import BM25Okapi
    except ImportError as e:
        raise BackendUnavailableError("BM25 evidence needs rank_bm25: pip install rank-bm25 "
                                      "(it is in the [cpu] extra)") from e

    class LuceneIdfBM25(BM25Okapi):
        def _calc_idf(self, nd: dict[str, int]) -> None:  # rank_bm25's hook, called from __init__
            for word, df in nd.items():
                self.idf[word] = math.log(1.0 + (self.corpus_size - df + 0.5) / (df + 0.5))
            self.average_idf = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0

    return LuceneIdfBM25


def _bm25(tokenized: list[list[str]]) -> Any:
    """A BM25 index (Lucene IDF, see :func:`_bm25_class`) over tokenised passages."""
    return _bm25_class()(tokenized)


def _top_k(scores: Sequence[float], k: int) -> list[int]:
    """Indices of the ``k`` best positive scores; ties keep corpus order (a stable sort)."""
    order = sorted((j for j in range(len(scores)) if scores[j] > 0.0), key=lambda j: -scores[j])
    return order[:k]


class RetrievalCache:
    """Retrieval results as one small JSON file per key under ``root`` (atomic writes).

    A file that cannot be read is treated as a miss and rewritten, never as an error.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(fingerprint: str, claim: str, k: int) -> str:
        return hashlib.sha256(json.dumps([fingerprint, claim, k], ensure_ascii=False).encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[str] | None:
        p = self._path(key)
        if not p.is_file():
            return None
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("unreadable retrieval cache entry %s; recomputing it", p)
            return None
        if not (isinstance(data, list) and all(isinstance(x, str) for x in data)):
            return None
        return data

    def put(self, key: str, passages: Sequence[str]) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(list(passages), f, ensure_ascii=False)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class AttachedDocs:
    """Evidence from the documents attached to each answer (``AnswerItem.docs``).

    The documents (lfqa_eval's ``doc_a``/``doc_b``, RAG contexts) are split into passages and
    ranked for each claim with BM25 over that answer's passages only; a passage that shares no word
    with the claim is never evidence for it. No disk cache: ranking a few passages costs less than
    reading a file.

    Args:
        passage_words: longest passage, in words.

    Raises:
        ConfigError: ``passage_words`` < 1.
        BackendUnavailableError: rank_bm25 is not installed.
    """

    name = "attached"

    def __init__(self, *, passage_words: int = 120) -> None:
        check_range("passage_words", passage_words, low=1)
        _bm25_class()  # fail now, not on the first answer, when rank_bm25 is missing
        self.passage_words = passage_words

    def retrieve(self, claims: Sequence[str], item: AnswerItem, k: int) -> list[list[str]]:
        _check_k(k)
        passages = [p for p in split_passages(item.docs, self.passage_words) if tokenize(p)]
        if not passages:
            return [[] for _ in claims]
        bm25 = _bm25([tokenize(p) for p in passages])
        return [[passages[j] for j in _top_k(list(bm25.get_scores(tokenize(c))), k)] for c in claims]


class BM25Corpus:
    """A local corpus indexed with BM25 (``rank_bm25.BM25Okapi``, Lucene IDF), the same for every answer.

    Only documents sharing at least one term with the claim are returned.

    Args:
        texts: the documents (or passages).
        ids: their ids (default: their positions), for logs.
        fingerprint: identifies the corpus in cache keys (default: a hash of the texts).
        cache_dir: where retrieval results are cached; None for no disk cache.

    Raises:
        BackendUnavailableError: rank_bm25 is not installed.
        InputError: no document has a word in it.
        ConfigError: ``ids`` and ``texts`` differ in length.
    """

    def __init__(self, texts: Sequence[str], *, ids: Sequence[str] | None = None, fingerprint: str | None = None,
                 cache_dir: str | Path | None = None) -> None:
        _bm25_class()  # before any work on the texts: rank_bm25 missing is a setup error
        if not texts:
            raise InputError("a BM25 corpus needs at least one document")
        if ids is not None and len(ids) != len(texts):
            raise ConfigError(f"{len(ids)} ids for {len(texts)} documents")
        self.texts = list(texts)
        self.ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(len(texts))]
        if fingerprint is None:
            h = hashlib.sha256(_TOKENIZER_VERSION.encode())
            for t in self.texts:
                h.update(t.encode("utf-8", "surrogatepass"))
                h.update(b"\x00")
            fingerprint = h.hexdigest()
        self.fingerprint = fingerprint
        self.name = f"bm25:{fingerprint[:12]}"
        tokenized = [tokenize(t) for t in self.texts]
        if not any(tokenized):
            raise InputError("a BM25 corpus needs at least one document with a word in it")
        self.cache = RetrievalCache(cache_dir) if cache_dir is not None else None
        self._bm25 = _bm25(tokenized)

    @classmethod
    def from_file(cls, path: str | Path, *, text_field: str = "text", id_field: str | None = None,
                  passage_words: int | None = None, cache_dir: str | Path | None = None) -> "BM25Corpus":
        """Index a JSONL (``.jsonl``, ``.ndjson``) or Parquet (``.parquet``) corpus.

        Args:
            path: the corpus file; one document per line / row.
            text_field: the field holding the document text (RAG-QA Arena: ``answer``).
            id_field: the field holding a document id (RAG-QA Arena: ``qid``); default: row numbers.
            passage_words: split long documents into passages of this many words (None: whole documents).
            cache_dir: where retrieval results are cached; None for no disk cache.

        Raises:
            BackendUnavailableError: rank_bm25 is not installed (checked before the file is read).
            InputError: the file is missing, unreadable, of an unknown type, lacks ``text_field``, or
                holds no usable document.
        """
        _bm25_class()  # before reading a possibly large corpus
        path = Path(path)
        if not path.is_file():
            raise InputError(f"corpus file {str(path)!r} does not exist")
        rows = _read_rows(path, text_field, id_field)
        texts: list[str] = []
        ids: list[str] = []
        skipped = 0
        for n, (doc_id, text) in enumerate(rows):
            if not isinstance(text, str) or not text.strip():
                skipped += 1
                continue
            pieces = [text] if passage_words is None else split_passages([text], passage_words)
            for j, piece in enumerate(pieces):
                texts.append(piece)
                base = str(doc_id) if doc_id is not None else str(n)
                ids.append(base if len(pieces) == 1 else f"{base}#{j}")
        if skipped:
            log.warning("%s: skipped %d rows with an empty or non-text %r", path, skipped, text_field)
        if not texts:
            raise InputError(f"corpus {str(path)!r} has no documents with text in field {text_field!r}")
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(json.dumps([_TOKENIZER_VERSION, text_field, id_field, passage_words]).encode())
        log.info("indexed %d passages from %s with BM25", len(texts), path)
        return cls(texts, ids=ids, fingerprint=h.hexdigest(), cache_dir=cache_dir)

    def search(self, query: str, k: int) -> list[tuple[str, float, str]]:
        """``(id, score, text)`` of the top ``k`` documents sharing a term with ``query``."""
        _check_k(k)
        scores = list(self._bm25.get_scores(tokenize(query)))
        return [(self.ids[j], float(scores[j]), self.texts[j]) for j in _top_k(scores, k)]

    def retrieve(self, claims: Sequence[str], item: AnswerItem, k: int) -> list[list[str]]:
        _check_k(k)
        out: list[list[str]] = []
        for claim in claims:
            key = RetrievalCache.key(self.fingerprint, claim, k)
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is None:
                hit = [text for _, _, text in self.search(claim, k)]
                if self.cache is not None:
                    self.cache.put(key, hit)
            out.append(hit)
        return out


def _read_rows(path: Path, text_field: str, id_field: str | None) -> list[tuple[Any, Any]]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise InputError(f"{path}:{lineno} is not valid JSON: {e}") from e
                if not isinstance(rec, dict) or text_field not in rec:
                    raise InputError(f"{path}:{lineno} has no field {text_field!r}")
                rows.append((rec.get(id_field) if id_field else None, rec[text_field]))
        return rows
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise InputError(f"cannot read {path} as Parquet: {e}") from e
        missing = [c for c in (text_field, id_field) if c and c not in names]
        if missing:
            raise InputError(f"{path} has no column(s) {missing}; columns: {names}")
        cols = [text_field] + ([id_field] if id_field else [])
        table = pq.read_table(path, columns=cols)
        texts = table.column(text_field).to_pylist()
        ids = table.column(id_field).to_pylist() if id_field else [None] * len(texts)
        return list(zip(ids, texts))
    raise InputError(f"corpus {path.name!r}: use a .jsonl or .parquet file")


def serper_snippets(payload: dict, k: int) -> list[str]:
    """Evidence passages from a Serper ``/search`` response: the answer box, the knowledge graph's
    description, then organic results as ``title: snippet``; at most ``k``."""
    out: list[str] = []
    box = payload.get("answerBox") or {}
    for key in ("answer", "snippet"):
        if isinstance(box.get(key), str) and box[key].strip():
            out.append(box[key].strip())
            break
    kg = payload.get("knowledgeGraph") or {}
    if isinstance(kg.get("description"), str) and kg["description"].strip():
        out.append(kg["description"].strip())
    for r in payload.get("organic") or []:
        snippet = r.get("snippet") if isinstance(r, dict) else None
        if isinstance(snippet, str) and snippet.strip():
            title = r.get("title")
            out.append(f"{title.strip()}: {snippet.strip()}" if isinstance(title, str) and title.strip()
                       else snippet.strip())
    return out[:k]


class SerperSearch:
    """Web-search evidence through a Serper-compatible API (off unless constructed explicitly).

    Each claim is one search; results are cached on disk when ``cache_dir`` is given (searches
    cost money). A failed request raises ``EngineError``: a dead search backend stops the run
    rather than scoring every claim as unsupported. Never called in the tests.

    Args:
        api_key: the API key (default: ``$SERPER_API_KEY``).
        endpoint: the search URL.
        timeout: seconds per request.
        cache_dir: where results are cached; None for no disk cache.

    Raises:
        ConfigError: no API key.
    """

    name = "serper"
    ENV_KEY = "SERPER_API_KEY"

    def __init__(self, api_key: str | None = None, *, endpoint: str = "https://google.serper.dev/search",
                 timeout: float = 20.0, cache_dir: str | Path | None = None) -> None:
        key = api_key if api_key is not None else os.environ.get(self.ENV_KEY, "")
        if not key or not key.strip():
            raise ConfigError(f"SerperSearch needs an API key: set ${self.ENV_KEY} or pass api_key=; web search is "
                              "off by default (use attached documents or a local BM25 corpus instead)")
        check_range("timeout", timeout, above=0)
        self._key = key.strip()
        self.endpoint = endpoint
        self.timeout = timeout
        self.cache = RetrievalCache(cache_dir) if cache_dir is not None else None

    def __repr__(self) -> str:  # never show the key
        return f"SerperSearch(endpoint={self.endpoint!r})"

    def retrieve(self, claims: Sequence[str], item: AnswerItem, k: int) -> list[list[str]]:
        _check_k(k)
        out: list[list[str]] = []
        for claim in claims:
            key = RetrievalCache.key(f"serper:{self.endpoint}", claim, k)
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is None:
                hit = serper_snippets(self._search(claim, k), k)
                if self.cache is not None:
                    self.cache.put(key, hit)
            out.append(hit)
        return out

    def _search(self, query: str, k: int) -> dict:
        body = json.dumps({"q": query, "num": max(k, 10)}).encode("utf-8")
        req = urllib.request.Request(self.endpoint, data=body, method="POST",
                                     headers={"X-API-KEY": self._key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - fixed https endpoint
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            raise EngineError(f"Serper search failed with HTTP {e.code} ({e.reason})") from e
        except (urllib.error.URLError, TimeoutError, ValueError) as e:
            raise EngineError(f"Serper search failed: {e}") from e
