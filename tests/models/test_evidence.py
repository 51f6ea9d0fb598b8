import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("rank_bm25")

from models.rubric_backends.evidence import (  # noqa: E402
    AttachedDocs,
    BM25Corpus,
    EvidenceSource,
    RetrievalCache,
    SerperSearch,
    serper_snippets,
    split_passages,
    tokenize,
)
from rubric.errors import ConfigError, InputError  # noqa: E402
from rubric.io.records import AnswerItem  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
ARENA = DATA / "rag-qa-arena" / "annotations_science_with_citation.jsonl"

PLANTED = {"qid": "planted-1", "answer": "The Zorblatt bridge in Kelvingrad was built in 1873 from cast iron "
           "by the engineer Mira Castellan, and it still carries trams across the river."}
CLAIM = "The Zorblatt bridge was built in 1873."
FILLER = [
    {"qid": f"f{i}", "answer": t} for i, t in enumerate([
        "Bridges made of steel expand in summer heat, so engineers add expansion joints.",
        "Cast iron is brittle under tension but strong under compression.",
        "The river Thames has many bridges, several of them built in the nineteenth century.",
        "Trams were common in European cities before buses replaced many of them.",
        "Light is scattered by molecules in the air, which makes the sky look blue.",
    ])
]
ITEM = AnswerItem("a1", "q", "a")


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_tokenize_and_passages():
    assert tokenize("The U.S. spent $3.5bn; it's NEW_thing") == ["the", "u", "s", "spent", "3", "5bn", "it", "s",
                                                                  "new", "thing"]
    ps = split_passages(["para one.\n\npara two " + "w " * 250, "", None], passage_words=100)  # type: ignore[list-item]
    assert ps[0] == "para one." and len(ps) == 1 + 3
    with pytest.raises(ConfigError):
        split_passages(["x"], 0)


def test_bm25_finds_planted_doc_synthetic(tmp_path):
    corpus = BM25Corpus.from_file(_write_jsonl(tmp_path / "c.jsonl", FILLER + [PLANTED]), text_field="answer",
                                  id_field="qid")
    hits = corpus.search(CLAIM, 3)
    assert hits[0][0] == "planted-1"
    assert all(s > 0 for _, s, _ in hits)
    assert corpus.retrieve([CLAIM], ITEM, 1) == [[PLANTED["answer"]]]
    assert corpus.retrieve(["qwertyuiop zxcvbnm"], ITEM, 3) == [[]]  # no shared term: no evidence
    assert isinstance(corpus, EvidenceSource)


@pytest.mark.skipif(not ARENA.is_file(), reason=f"RAG-QA Arena sample not found at {ARENA}")
def test_bm25_finds_planted_doc_among_rag_qa_arena_answers(tmp_path):
    with ARENA.open(encoding="utf-8") as f:
        rows = [json.loads(next(f)) for _ in range(200)]
    rows.insert(97, PLANTED)
    path = _write_jsonl(tmp_path / "arena.jsonl", rows)
    corpus = BM25Corpus.from_file(path, text_field="answer", id_field="qid")
    assert len(corpus.texts) == 201
    assert corpus.search(CLAIM, 5)[0][0] == "planted-1"
    # an answer from the real data is found by a claim paraphrasing its first sentence
    target = rows[0]
    first = target["answer"].split(".")[0]
    assert corpus.search(first, 3)[0][0] == target["qid"]


def test_bm25_parquet_and_cache(tmp_path):
    rows = FILLER + [PLANTED]
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    cache = tmp_path / "cache"
    corpus = BM25Corpus.from_file(path, text_field="answer", id_field="qid", cache_dir=cache)
    first = corpus.retrieve([CLAIM, "cast iron is brittle"], ITEM, 2)
    assert first[0][0] == PLANTED["answer"]
    files = sorted(cache.rglob("*.json"))
    assert len(files) == 2
    # a second corpus object over the same file answers from the cache (same fingerprint)
    again = BM25Corpus.from_file(path, text_field="answer", id_field="qid", cache_dir=cache)
    assert again.fingerprint == corpus.fingerprint
    key = RetrievalCache.key(corpus.fingerprint, CLAIM, 2)
    RetrievalCache(cache).put(key, ["from the cache"])
    assert again.retrieve([CLAIM], ITEM, 2) == [["from the cache"]]
    # a different k is a different key; a corrupt entry is a miss, not an error
    assert again.retrieve([CLAIM], ITEM, 1)[0][0] == PLANTED["answer"]
    files = sorted(cache.rglob("*.json"))
    for f in files:
        f.write_text("{not json")
    assert again.retrieve([CLAIM], ITEM, 2)[0][0] == PLANTED["answer"]


@pytest.mark.parametrize("content,suffix,msg", [
    ('{"text": "a b"}\nnot json\n', ".jsonl", "not valid JSON"),
    ('{"body": "a b"}\n', ".jsonl", "no field 'text'"),
    ('{"text": "   "}\n{"text": null}\n', ".jsonl", "no documents"),
    ("a,b\n", ".csv", "use a .jsonl or .parquet"),
])
def test_corpus_file_errors(tmp_path, content, suffix, msg):
    path = tmp_path / f"c{suffix}"
    path.write_text(content)
    with pytest.raises(InputError, match=msg):
        BM25Corpus.from_file(path)
    with pytest.raises(InputError, match="does not exist"):
        BM25Corpus.from_file(tmp_path / "missing.jsonl")


def test_attached_docs_ranks_the_right_passage():
    docs = ("Cast iron is brittle under tension.\n\nThe Zorblatt bridge was built in 1873 by Mira Castellan.",
            "Trams were common in European cities.")
    item = AnswerItem("a1", "q", "a", docs=docs)
    src = AttachedDocs()
    got = src.retrieve([CLAIM, "Trams were common in cities."], item, 2)
    assert got[0][0].startswith("The Zorblatt bridge")
    assert got[1][0] == "Trams were common in European cities."
    assert all(len(g) == 2 for g in got)
    assert src.retrieve([CLAIM], AnswerItem("a2", "q", "a"), 3) == [[]]           # no docs: no evidence
    one = AnswerItem("a3", "q", "a", docs=("Only one passage about a bridge here.",))
    assert src.retrieve([CLAIM, "x y"], one, 3) == [["Only one passage about a bridge here."], []]


def test_tiny_corpus_ranks_by_shared_terms():
    # Okapi's own IDF is <= 0 for every term here (each is in half the documents or more); Lucene's is not.
    docs = ["the bridge was built in 1873", "the garden was built in spring", "the bridge is old"]
    corpus = BM25Corpus(docs)
    assert [i for i, _, _ in corpus.search("bridge built 1873", 3)] == ["0", "2", "1"]
    assert BM25Corpus(docs[:2]).search("bridge", 2)[0][0] == "0"


def test_serper_needs_a_key(monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="SERPER_API_KEY"):
        SerperSearch()
    with pytest.raises(ConfigError, match="SERPER_API_KEY"):
        SerperSearch(api_key="  ")
    monkeypatch.setenv("SERPER_API_KEY", "secret-key")
    s = SerperSearch()  # constructing makes no request
    assert "secret-key" not in repr(s)


def test_serper_snippets_parsing():
    payload = {"answerBox": {"snippet": "Built in 1873."}, "knowledgeGraph": {"description": "A bridge."},
               "organic": [{"title": "Zorblatt", "snippet": "The bridge opened in 1873."}, {"title": "x"},
                           {"snippet": "No title here."}, "junk"]}
    assert serper_snippets(payload, 10) == ["Built in 1873.", "A bridge.", "Zorblatt: The bridge opened in 1873.",
                                            "No title here."]
    assert serper_snippets(payload, 2) == ["Built in 1873.", "A bridge."]
    assert serper_snippets({}, 3) == []
