"""Offline synonym sources: WordNet's database files (a small hand-made database in WordNet's format,
and the real one when Debian's wordnet-base is installed) and MiniLM embedding neighbours."""

from __future__ import annotations

import numpy as np
import pytest

import models.attacks.synonyms as syn
from models.attacks.synonyms import EmbeddingNeighbours, WordNetSynonyms, build_synonyms, wordnet_dir
from rubric.errors import BackendUnavailableError, ConfigError
from rubric.perturbation.attacks import synonym_candidates, words

LICENCE = "  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n"


def write_wordnet(folder, synsets):
    """Write index.<pos>/data.<pos> files for ``synsets``: {pos: [(key, [words], gloss)]}.

    Data lines start with their own 8-digit byte offset, as in WordNet; the index lists each lemma's
    synsets in the order given (its sense order), with a tagged-sense count of 10 per synset.
    """
    ss_type = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
    offsets = {}
    for pos, entries in synsets.items():
        lines = [LICENCE]
        pos_bytes = len(LICENCE.encode())
        for key, members, gloss in entries:
            body = " ".join(f"{w} 0" for w in members)
            line = f"{pos_bytes:08d} 00 {ss_type[pos]} {len(members):02x} {body} 000 | {gloss}  \n"
            offsets[(pos, key)] = pos_bytes
            lines.append(line)
            pos_bytes += len(line.encode())
        (folder / f"data.{pos}").write_text("".join(lines))
        index: dict[str, list[int]] = {}
        for key, members, _ in entries:
            for w in members:
                lemma = syn._ADJ_MARKER.sub("", w).lower()
                index.setdefault(lemma, []).append(offsets[(pos, key)])
        rows = [LICENCE]
        for lemma in sorted(index):
            offs = index[lemma]
            rows.append(f"{lemma} {ss_type[pos]} {len(offs)} 0 {len(offs)} {10 * len(offs)} "
                        + " ".join(f"{o:08d}" for o in offs) + "  \n")
        (folder / f"index.{pos}").write_text("".join(rows))


@pytest.fixture
def tiny_wordnet(tmp_path):
    write_wordnet(tmp_path, {
        "adj": [("big", ["big", "large"], "above average in size"),
                ("big2", ["big", "bad"], "very intense"),
                ("quick", ["quick(a)", "speedy", "fast"], "moving quickly")],
        "noun": [("car", ["car", "auto", "automobile", "motor_vehicle"], "a motor vehicle"),
                 ("apple", ["apple", "Malus_pumila"], "fruit")],
        "verb": [("run", ["run", "operate"], "direct or control"),
                 ("run2", ["run", "go"], "move fast")],
    })
    return tmp_path


def test_wordnet_candidates_follow_sense_order_and_drop_phrases_and_the_word(tiny_wordnet):
    wn = WordNetSynonyms(tiny_wordnet)
    assert wn.candidates("big") == ["large", "bad"]
    assert wn.candidates("Car") == ["auto", "automobile"]  # "motor_vehicle" is two words
    assert wn.candidates("run") == ["operate", "go"]
    assert wn.candidates("quick") == ["speedy", "fast"]  # the "(a)" marker is not part of the lemma
    assert wn.candidates("speedy") == ["quick", "fast"]
    assert wn.candidates("apple") == []
    assert wn.candidates("zebra") == []
    assert "wordnet:" in wn.name


def test_wordnet_reads_only_the_first_senses_when_asked(tiny_wordnet):
    first = WordNetSynonyms(tiny_wordnet, max_senses=1)
    assert first.candidates("big") == ["large"]  # not "bad", its second sense
    assert first.candidates("run") == ["operate"]
    assert "first-1-senses" in first.name
    with pytest.raises(ConfigError, match="max_senses"):
        WordNetSynonyms(tiny_wordnet, max_senses=0)


def test_the_attack_never_gets_the_word_itself_from_wordnet(tiny_wordnet):
    wn = WordNetSynonyms(tiny_wordnet)
    for w in ["Big", "car", "RUN", "quick", "speedy", "large"]:
        got = synonym_candidates(w, wn)
        assert got and all(c.lower() != w.lower() for c in got)
    assert synonym_candidates("Big", wn) == ["Large", "Bad"]


def test_missing_wordnet_says_how_to_install_it(tmp_path):
    with pytest.raises(BackendUnavailableError, match="wordnet-base"):
        WordNetSynonyms(tmp_path)


def test_wordnet_dir_honours_the_environment(tiny_wordnet, monkeypatch):
    monkeypatch.delenv("WNHOME", raising=False)
    monkeypatch.setenv("WORDNET_DIR", str(tiny_wordnet))
    monkeypatch.setattr(syn, "WORDNET_DIRS", ())
    assert wordnet_dir() == tiny_wordnet
    monkeypatch.delenv("WORDNET_DIR")
    assert wordnet_dir() is None


class FakeEncoder:
    """Embeds words by a fixed table (unknown words all get the same unrelated vector)."""

    model_id = "fake"

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        out = []
        for t in texts:
            out.append(self.table.get(t, [0, 0, 0, 1]))
        return np.asarray(out, dtype=np.float32)


def test_embedding_neighbours_are_the_closest_vocabulary_words_above_the_threshold():
    enc = FakeEncoder({"big": [1, 0, 0, 0], "large": [0.9, 0.1, 0, 0], "huge": [0.8, 0.3, 0, 0],
                       "small": [-1, 0, 0, 0], "car": [0, 0, 1, 0]})
    nb = EmbeddingNeighbours(enc, ["Large", "huge", "small", "car", "big", "an"], k=5, min_similarity=0.6)
    assert nb.candidates("big") == ["large", "huge"]
    assert nb.candidates("BIG") == ["large", "huge"]
    calls = enc.calls
    nb.candidates("big")  # remembered, and the vocabulary was embedded once
    assert enc.calls == calls
    assert "an" not in nb.vocabulary
    with pytest.raises(ConfigError, match="vocabulary"):
        EmbeddingNeighbours(enc, ["a", "an"])
    with pytest.raises(ConfigError, match="'k'"):
        EmbeddingNeighbours(enc, ["large"], k=0)


def test_auto_falls_back_to_embedding_neighbours_without_wordnet(monkeypatch, caplog):
    monkeypatch.delenv("WNHOME", raising=False)
    monkeypatch.delenv("WORDNET_DIR", raising=False)
    monkeypatch.setattr(syn, "WORDNET_DIRS", ())
    enc = FakeEncoder({"big": [1, 0, 0, 0], "large": [0.9, 0.1, 0, 0]})
    source = build_synonyms("auto", vocabulary=["large", "big"], encoder=enc)
    assert isinstance(source, EmbeddingNeighbours) and source.candidates("big") == ["large"]
    assert "falling back" in caplog.text
    with pytest.raises(BackendUnavailableError):
        build_synonyms("wordnet")
    with pytest.raises(ConfigError, match="unknown synonym source"):
        build_synonyms("thesaurus")


def test_wordnet_is_chosen_when_its_files_are_there(tiny_wordnet):
    source = build_synonyms("auto", wordnet_folder=tiny_wordnet)
    assert isinstance(source, WordNetSynonyms) and source.candidates("car") == ["auto", "automobile"]


needs_wordnet = pytest.mark.skipif(wordnet_dir() is None,
                                   reason="WordNet's files are not installed (apt-get install wordnet-base)")


@needs_wordnet
def test_real_wordnet_gives_synonyms_and_never_the_word_itself():
    wn = WordNetSynonyms()
    assert "rapidly" in wn.candidates("quickly")
    assert "large" in wn.candidates("big")
    text = ("Cooking a pork tenderloin in the oven results in a juicy and flavorful dish. Season it with salt, "
            "pepper and your preferred herbs, then let it rest before slicing and serving.")
    n = 0
    for w in words(text):
        for c in synonym_candidates(w.text, wn):
            assert c.lower() != w.text.lower() and len(words(c)) == 1
            n += 1
    assert n > 20


@pytest.mark.slow
def test_minilm_neighbours_find_related_words():
    from models.baselines.encoder import SentenceEncoder

    nb = EmbeddingNeighbours(SentenceEncoder(), ["large", "huge", "enormous", "banana", "quietly", "tiny",
                                                 "bicycle", "democracy"], k=3, min_similarity=0.5)
    got = nb.candidates("big")
    assert got and set(got) <= {"large", "huge", "enormous", "tiny"}
    assert "banana" not in nb.candidates("big") and "big" not in got
