"""Offline synonym sources for the TextFooler-style attack (``rubric.perturbation.attacks``).

Primary source: **WordNet 3.0**, read straight from its database files (``index.<pos>`` and
``data.<pos>``), which Debian's ``wordnet-base`` package installs in ``/usr/share/wordnet``
(``make setup`` installs it where it can; ``$WNHOME`` or ``$WORDNET_DIR`` point elsewhere). No NLTK
corpus download is involved: the format is small and documented (``wndb(5WN)``), and this module
parses it. A word's candidates are the single-word lemmas of the synsets it belongs to, from its
most frequent sense down. Only synsets the word itself is a lemma of count, so "running" gets the
synonyms of the noun or adjective "running", not of the verb "run" in another inflection.

Fallback: **nearest neighbours in the MiniLM embedding space** over a vocabulary (the words of
the attacked input itself), used when the WordNet files are not installed, or when asked for. It
finds related words rather than synonyms ("hot" -> "cold" can be close), so it is the weaker
source; ``min_similarity`` keeps only close neighbours.

Both return lower-case candidates best first; ``rubric.perturbation.attacks.synonym_candidates`` filters them
(the word itself, forms of its stem, stopwords, anything that is not one word).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from rubric.config import check_range
from rubric.errors import BackendUnavailableError, ConfigError

__all__ = ["WORDNET_DIRS", "SYNONYM_SOURCES", "wordnet_dir", "WordNetSynonyms", "EmbeddingNeighbours",
           "build_synonyms"]

log = logging.getLogger(__name__)

#: Where WordNet's database files are looked for, in order (after $WNHOME/dict, $WNHOME, $WORDNET_DIR).
WORDNET_DIRS: tuple[str, ...] = ("/usr/share/wordnet", "/usr/local/share/wordnet", "/usr/local/WordNet-3.0/dict")
#: The names ``build_synonyms`` (and ``lfqa-rubric perturb --synonyms``) accepts.
SYNONYM_SOURCES: tuple[str, ...] = ("auto", "wordnet", "embedding")
_POS = ("noun", "verb", "adj", "adv")
_INSTALL = ("install Debian's wordnet-base (apt-get install wordnet-base, as root; `make setup` does it), "
            "or set WORDNET_DIR to a folder with WordNet 3.0's index.* and data.* files")
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


def wordnet_dir() -> Path | None:
    """The first folder that holds WordNet's ``index.noun``, or None."""
    candidates = []
    if os.environ.get("WNHOME"):
        candidates += [Path(os.environ["WNHOME"]) / "dict", Path(os.environ["WNHOME"])]
    if os.environ.get("WORDNET_DIR"):
        candidates.append(Path(os.environ["WORDNET_DIR"]))
    candidates += [Path(d) for d in WORDNET_DIRS]
    return next((d for d in candidates if (d / "index.noun").is_file()), None)


class WordNetSynonyms:
    """Synonyms from WordNet's database files.

    The index files (~6 MB) are read when the source is built; a data file is read the first time a
    word of its part of speech is looked up.

    Args:
        folder: the folder with ``index.<pos>`` and ``data.<pos>``; None looks in :func:`wordnet_dir`.
        max_senses: read only a word's first senses per part of speech (its commonest: "pump" is then a machine,
            never a "heart"); None reads them all (the attack's candidates).

    Raises:
        BackendUnavailableError: no WordNet files were found (the message says how to install them).
        ConfigError: ``max_senses`` below 1.
    """

    def __init__(self, folder: str | Path | None = None, *, max_senses: int | None = None) -> None:
        if max_senses is not None:
            check_range("max_senses", max_senses, low=1)
        self.max_senses = max_senses
        found = Path(folder) if folder is not None else wordnet_dir()
        if found is None or not (found / "index.noun").is_file():
            where = str(folder) if folder is not None else ", ".join(WORDNET_DIRS)
            raise BackendUnavailableError(f"WordNet's database files are not in {where}: {_INSTALL}")
        self.folder = found
        self.name = f"wordnet:{found}" + (f":first-{max_senses}-senses" if max_senses else "")
        # lemma -> [(pos, tagged sense count, synset offsets in sense order)]
        self._index: dict[str, list[tuple[str, int, list[int]]]] = {}
        for pos in _POS:
            path = found / f"index.{pos}"
            if not path.is_file():
                continue
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith(" "):  # the licence header
                        continue
                    parts = line.split()
                    try:
                        n_synsets, n_ptr = int(parts[2]), int(parts[3])
                        tagged = int(parts[5 + n_ptr])
                        offsets = [int(x) for x in parts[6 + n_ptr:6 + n_ptr + n_synsets]]
                    except (IndexError, ValueError):
                        continue
                    self._index.setdefault(parts[0], []).append((pos, tagged, offsets))
        if not self._index:
            raise BackendUnavailableError(f"no WordNet index entries could be read from {found}: {_INSTALL}")
        self._data: dict[str, bytes] = {}
        log.info("WordNet index read from %s: %d lemmas", found, len(self._index))

    def _synset_words(self, pos: str, offset: int) -> list[str]:
        data = self._data.get(pos)
        if data is None:
            data = self._data[pos] = (self.folder / f"data.{pos}").read_bytes()
        end = data.find(b"\n", offset)
        parts = data[offset:end if end >= 0 else None].decode("utf-8", errors="replace").split()
        # offset lex_filenum ss_type w_cnt (hex) then w_cnt pairs of (word, lex_id)
        try:
            n = int(parts[3], 16)
        except (IndexError, ValueError):
            return []
        return [_ADJ_MARKER.sub("", w) for w in parts[4:4 + 2 * n:2]]

    def candidates(self, word: str) -> list[str]:
        """Single-word lemmas sharing a synset with ``word``, most frequent sense first."""
        key = word.lower()
        entries = sorted(self._index.get(key, []), key=lambda e: -e[1])  # the most used part of speech first
        out: list[str] = []
        for pos, _tagged, offsets in entries:
            for off in offsets[:self.max_senses]:
                for lemma in self._synset_words(pos, off):
                    if "_" in lemma or lemma.lower() == key or lemma in out:
                        continue
                    out.append(lemma)
        return out


class EmbeddingNeighbours:
    """Nearest neighbours of a word in an encoder's embedding space, over a fixed vocabulary.

    The vocabulary is embedded once, on the first lookup (single words are short: it is fast).

    Args:
        encoder: a ``models.baselines.encoder.SentenceEncoder`` (or anything with ``encode(texts) -> array``).
        vocabulary: candidate words (lower-cased and deduplicated here; words of 1-2 letters dropped).
        k: neighbours returned per word, best first.
        min_similarity: cosine below which a neighbour is not returned.

    Raises:
        ConfigError: an empty vocabulary, ``k < 1``, or ``min_similarity`` outside [-1, 1].
    """

    def __init__(self, encoder, vocabulary: Iterable[str], *, k: int = 8, min_similarity: float = 0.6) -> None:
        vocab = sorted({w.lower() for w in vocabulary if len(w) >= 3})
        if not vocab:
            raise ConfigError("the embedding-neighbour synonym source needs a non-empty vocabulary")
        check_range("k", k, low=1)
        check_range("min_similarity", min_similarity, low=-1, high=1)
        self.encoder = encoder
        self.vocabulary = vocab
        self.k = k
        self.min_similarity = min_similarity
        self.name = f"embedding-neighbours:{getattr(encoder, 'model_id', type(encoder).__name__)}"
        self._matrix: np.ndarray | None = None
        self._memo: dict[str, list[str]] = {}

    @staticmethod
    def _unit(m: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(norms > 0, norms, 1.0)

    def candidates(self, word: str) -> list[str]:
        """Up to ``k`` vocabulary words closest to ``word`` (cosine >= ``min_similarity``), closest first."""
        key = word.lower()
        if key in self._memo:
            return self._memo[key]
        if self._matrix is None:
            log.info("embedding %d vocabulary words for synonym neighbours", len(self.vocabulary))
            self._matrix = self._unit(np.asarray(self.encoder.encode(self.vocabulary), dtype=np.float32))
        q = self._unit(np.asarray(self.encoder.encode([key]), dtype=np.float32))[0]
        sims = self._matrix @ q
        out = []
        for j in np.argsort(-sims, kind="stable"):
            if sims[j] < self.min_similarity or len(out) >= self.k:
                break
            if self.vocabulary[j] != key:
                out.append(self.vocabulary[j])
        self._memo[key] = out
        return out


def build_synonyms(kind: str = "auto", *, vocabulary: Iterable[str] = (), encoder=None,
                   wordnet_folder: str | Path | None = None):
    """The synonym source for an attack.

    Args:
        kind: "wordnet", "embedding", or "auto" (WordNet when its files are installed, else the
            embedding neighbours, with a warning).
        vocabulary: the embedding source's candidate words.
        encoder: the embedding source's encoder; None loads the packaged all-MiniLM-L6-v2.
        wordnet_folder: WordNet's folder; None looks in the usual places.

    Raises:
        ConfigError: an unknown kind.
        BackendUnavailableError: "wordnet" without its files, or "embedding" without sentence-transformers.
    """
    if kind not in SYNONYM_SOURCES:
        raise ConfigError(f"unknown synonym source {kind!r}; known: {', '.join(SYNONYM_SOURCES)}")
    if kind in ("auto", "wordnet"):
        try:
            return WordNetSynonyms(wordnet_folder)
        except BackendUnavailableError as e:
            if kind == "wordnet":
                raise
            log.warning("%s; falling back to MiniLM embedding neighbours over the input's words", e)
    if encoder is None:
        from models.baselines import SentenceEncoder

        encoder = SentenceEncoder()
    return EmbeddingNeighbours(encoder, vocabulary)
