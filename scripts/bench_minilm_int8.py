"""The int8 MiniLM encoder against fp32: embeddings per sentence, speed, and the rubric values of two score outputs.

    python scripts/bench_minilm_int8.py --trec 320 --webglm 100
    python scripts/bench_minilm_int8.py --trec 0 --webglm 0 --outputs trec=FP32_OUT,INT8_OUT webglm=FP32_OUT,INT8_OUT

Sentences: the distinct sentences the cpu preset's scorer encodes for the first ``--trec`` TREC-DL-NF passages and the
first ``--webglm`` WebGLM answers (recorded from its ``encode`` calls, as ``bench_cpu_profile.py`` does), each encoded
by both encoders (``models.rubric_backends.signals.minilm_encoder``): the cosine of each sentence's two embeddings
(min, 1st and 5th percentile, mean), and each encoder's wall and CPU seconds on them (the fastest of ``--repeat``).

Outputs: two ``score`` outputs of the same input, one per encoder (``--minilm-encoder``): per rubric, over the answers
both scored, Pearson's r and Spearman's rho of the raw values, mean and largest |difference| on the 1-5 scale, and
over the pairs of ``pairs.parquet``: the share whose rubric difference changes sign (one encoder says a is higher,
the other b; a tie on either side counts when the other is not one). How each encoder's rubrics predict people's
preferences is ``lfqa-rubric transfer`` and ``scripts/cpu_profile_table.py`` on the same outputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_cpu_profile import DATA, record, trec_items, webglm_items  # noqa: E402
from rubric.config import ScoringConfig  # noqa: E402
from rubric.scoring import RUBRICS  # noqa: E402
from rubric.presets import CPU  # noqa: E402


def sentences(items, batch_size: int) -> list[str]:
    """The distinct texts the cpu preset's spaCy + MiniLM scorer encodes for ``items``."""
    from models.backends import build_scorers

    specs = [RUBRICS.get(v) for v in CPU.rubric_versions.values() if RUBRICS.get(v).backend == "cpu_text"]
    scorers = build_scorers(specs, ScoringConfig(batch_size=batch_size, minilm_encoder="fp32"))
    work = record(scorers, items, batch_size)
    return list(dict.fromkeys(t for texts, _ in work.encode for t in texts))


def embeddings_table(texts: list[str], repeat: int) -> None:
    from models.rubric_backends import minilm_encoder, minilm_revision, onnx_encoder  # noqa: F401 - onnx: its cache
    from models.rubric_backends.cpu_rubrics import ENCODE_BATCH

    got = {}
    print("| encoder | model revision | texts | wall s | CPU s | texts/s | load before / after |")
    print("|---|---|---:|---:|---:|---:|---|")
    for e in ("fp32", "int8"):
        enc = minilm_encoder(e)
        enc.encode(texts[:32], batch_size=ENCODE_BATCH, convert_to_numpy=True, normalize_embeddings=True,
                   show_progress_bar=False)  # warm
        best, load0 = (float("inf"), float("inf")), os.getloadavg()[0]
        for _ in range(repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            got[e] = enc.encode(texts, batch_size=ENCODE_BATCH, convert_to_numpy=True, normalize_embeddings=True,
                                show_progress_bar=False)
            best = min(best, (time.perf_counter() - w0, time.process_time() - c0))
        print(f"| {e} | {minilm_revision(e)} | {len(texts)} | {best[0]:.2f} | {best[1]:.2f} | {len(texts) / best[0]:.0f} "
              f"| {load0:.2f} / {os.getloadavg()[0]:.2f} |")
    cos = (got["fp32"] * got["int8"]).sum(axis=1)
    print(f"\ncosine of each text's int8 and fp32 embeddings ({len(texts)} texts): min {cos.min():.4f}, "
          f"1st percentile {np.percentile(cos, 1):.4f}, 5th {np.percentile(cos, 5):.4f}, mean {cos.mean():.4f}; "
          f"lowest: {texts[int(cos.argmin())][:80]!r}\n")


def outputs_table(name: str, fp32: Path, int8: Path) -> None:
    import pyarrow.parquet as pq
    from scipy.stats import pearsonr, spearmanr

    a = pq.read_table(fp32 / "answers.parquet").to_pandas().set_index("answer_id")
    b = pq.read_table(int8 / "answers.parquet").to_pandas().set_index("answer_id")
    pa_, pb_ = (pq.read_table(o / "pairs.parquet").to_pandas().set_index("pair_id") for o in (fp32, int8))
    common = a.index.intersection(b.index)
    pairs = pa_.index.intersection(pb_.index)
    print(f"| set | rubric | revision (int8) | answers | Pearson r | Spearman rho | mean abs diff (1-5) | largest "
          f"| pairs | sign changed |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for rubric in CPU.rubric_versions:
        if f"{rubric}_raw" not in a or f"{rubric}_raw" not in b:
            continue
        x, y = a.loc[common, f"{rubric}_raw"].astype(float), b.loc[common, f"{rubric}_raw"].astype(float)
        ok = x.notna() & y.notna()
        x, y = x[ok].to_numpy(), y[ok].to_numpy()
        if not len(x):  # no answer scored by both (factuality without a reference)
            print(f"| {name} | {rubric} | | 0 | | | | | | |")
            continue
        s1, s2 = a.loc[common, rubric].astype(float)[ok], b.loc[common, rubric].astype(float)[ok]
        diff = np.abs(s1.to_numpy() - s2.to_numpy())
        d1, d2 = (p.loc[pairs, f"d_{rubric}"].astype(float) for p in (pa_, pb_))
        both = d1.notna() & d2.notna()
        flips = int(((np.sign(d1[both]) != np.sign(d2[both]))).sum())
        same = bool(np.array_equal(x, y))
        r = 1.0 if same else pearsonr(x, y)[0]
        rho = 1.0 if same else spearmanr(x, y)[0]
        rev = b.loc[common, f"{rubric}_model_revision"].iloc[0] if f"{rubric}_model_revision" in b else ""
        print(f"| {name} | {rubric} | {'int8' if 'onnx int8' in str(rev) else 'no MiniLM'} | {len(x)} | {r:.4f} "
              f"| {rho:.4f} | {diff.mean():.4f} | {diff.max():.4f} | {int(both.sum())} | {flips} "
              f"({100 * flips / max(1, int(both.sum())):.1f}%) |")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trec", type=int, default=320, help="TREC-DL-NF passages whose sentences are encoded; 0 skips")
    ap.add_argument("--webglm", type=int, default=100, help="WebGLM answers whose sentences are encoded; 0 skips")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--batch-size", type=int, default=ScoringConfig().batch_size)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each timing; the fastest is kept")
    ap.add_argument("--outputs", nargs="*", default=[], metavar="NAME=FP32_OUT,INT8_OUT",
                    help="score outputs of one input made by each encoder")
    args = ap.parse_args(argv)
    items = (trec_items(args.data / "TREC-DL-NF.json", args.trec) if args.trec else []) + (
        webglm_items(args.data / "WEBGLM_50.json", args.webglm) if args.webglm else [])
    if items:
        embeddings_table(sentences(items, args.batch_size), args.repeat)
    for spec in args.outputs:
        name, _, paths = spec.partition("=")
        fp32, int8 = (Path(p) for p in paths.split(","))
        outputs_table(name, fp32, int8)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
