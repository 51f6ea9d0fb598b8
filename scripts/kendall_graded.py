"""Per-question Kendall tau of each rubric against graded labels, beside the answer-length baseline.

Usage:
    lfqa-rubric score ../shared/data/WEBGLM_50.json --format graded --rubrics coherence,... --out OUT
    python scripts/kendall_graded.py OUT --data ../shared/data/WEBGLM_50.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq  # noqa: E402

from rubric.tables import table_rubrics  # noqa: E402
from rubric.preference import per_question_kendall  # noqa: E402
from rubric.io import read_graded_labels  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", help="a 'lfqa-rubric score --format graded' output folder")
    ap.add_argument("--data", required=True, help="the graded JSON file that was scored")
    ap.add_argument("--include-references", action="store_true")
    args = ap.parse_args()

    answers = pq.read_table(Path(args.outdir) / "answers.parquet")
    grades = read_graded_labels(args.data, include_references=args.include_references)
    rows = answers.to_pylist()
    columns = {"answer length (words)": "n_words", **{r: r for r in table_rubrics(answers)}}
    lines = ["| score | mean Kendall tau | questions | undefined |", "|---|---:|---:|---:|"]
    for label, col in columns.items():
        groups: dict[str, list] = {}
        for row in rows:
            if row["answer_id"] in grades:
                qid, grade = grades[row["answer_id"]]
                groups.setdefault(qid, []).append((grade, row[col]))
        res = per_question_kendall(groups)
        lines.append(f"| {label} | {res['mean_tau']:+.3f} | {res['n_questions']} | {res['n_undefined']} |")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
