"""The English-only versions' language check against real English and written examples: how far apart they are.

Prints, as Markdown, the English share (``rubric.scoring.english_share``) of every English text of
``../shared/data`` (WebGLM, TREC-DL-NF, RAG-QA Arena, SummEval) and the bundled sample with at least 8 words:
its lowest values and quantiles, and how many the check calls another language; then each example of
``tests/rubric/language_examples.json`` with its share and the check's verdict. docs/cpu-profile.md quotes it.

    python scripts/language_margin.py
"""

from __future__ import annotations

import argparse
import json
import time
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def english_texts(data: Path) -> list[str]:
    """Every answer-like text (80 characters or more) of the public data and the bundled sample."""
    texts = []
    for line in (resources.files("rubric") / "data" / "sample_pairs.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            texts += [r["answer_1"], r["answer_2"]]
    for q in json.loads((data / "WEBGLM_50.json").read_text(encoding="utf-8")).values():
        texts += [d["answer"] for d in q["doc_list"]] + [q[k] for k in q if k.startswith("ground")]
    for answers in json.loads((data / "TREC-DL-NF.json").read_text(encoding="utf-8")).values():
        texts += [a["passage"] for a in answers]
    for path in [*sorted((data / "rag-qa-arena").glob("*.jsonl")), data / "summeval_dev.jsonl"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            texts += [v for v in json.loads(line).values() if isinstance(v, str) and len(v) >= 80]
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()
    from models.rubric_backends import english_check
    from rubric.scoring import WORD_ZIPF, english_share, latin_words, not_english

    def rss_mb() -> float:
        return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024

    before, t0 = rss_mb(), time.perf_counter()
    check = english_check()
    check("The sky is blue.")  # the word lists load on first use
    print(f"the check's word lists: +{rss_mb() - before:.0f} MB resident, {time.perf_counter() - t0:.2f} s")
    frequency = check.keywords["frequency"]
    def english_alone(text: str) -> float:  # the share with an English Zipf >= WORD_ZIPF, other languages ignored
        words = latin_words(text)
        return sum(frequency(w.lower())[0] >= WORD_ZIPF for w in words) / len(words) if words else 0.0

    rows, alone = [], []
    texts = english_texts(Path(args.data))
    for run in ("first pass, each word looked up", "again, every word cached"):
        t0 = time.perf_counter()
        for text in texts:
            check(text)
        print(f"the check on all {len(texts):,} texts, {run}: {time.perf_counter() - t0:.2f} s")
    for text in texts:
        share, n = english_share(latin_words(text), frequency)
        if n >= 8:
            rows.append((share, n, not_english(text, frequency) is not None, text))
            alone.append(english_alone(text))
    rows.sort(key=lambda r: r[0])
    alone.sort()
    q = [rows[int(len(rows) * f)][0] for f in (0.001, 0.01, 0.05, 0.5)]
    print(f"English texts of >= 8 words: {len(rows):,}; called another language: {sum(r[2] for r in rows)} (of all "
          f"{len(texts):,} texts: {sum(not_english(t, frequency) is not None for t in texts)})\n")
    print("| | lowest | 0.1% | 1% | 5% | median |\n|---|---:|---:|---:|---:|---:|")
    print(f"| English share | {rows[0][0]:.3f} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} | {q[3]:.3f} |")
    print("| English Zipf >= 3 alone | " + " | ".join(f"{alone[int(len(alone) * f)]:.3f}"
                                                    for f in (0.0, 0.001, 0.01, 0.05, 0.5)) + " |\n")
    print("| the five lowest English texts | words | English share |\n|---|---:|---:|")
    for share, n, _, text in rows[:5]:
        print(f"| {' '.join(text.split())[:60].replace('|', '/')}... | {n} | {share:.3f} |")
    examples = json.loads((ROOT / "tests" / "rubric" / "language_examples.json").read_text(encoding="utf-8"))
    print("\n| example | written in | English share (words) | English Zipf >= 3 alone | the check says |\n"
          "|---|---|---:|---:|---|")
    for kind in ("not_english", "english"):
        for name, text in examples[kind].items():
            share, n = english_share(latin_words(text), frequency)
            why = not_english(text, frequency)
            print(f"| {name} | {'another language' if kind == 'not_english' else 'English'} | {share:.2f} ({n}) | "
                  f"{english_alone(text):.2f} | {'English' if why is None else why.split(';')[0]} |")


if __name__ == "__main__":
    main()
