"""Measure rubric versions against people's ratings of their aspects on the shared aspect sets, and keep the figures
in the registry's data (``rubric/data/agreement.json``: ``lfqa-rubric rubrics``, summary.md and the HTML report read
them there)::

    python scripts/measure_agreement.py                      # the cpu preset's versions, every set
    python scripts/measure_agreement.py --versions coherence.minilm.v1,relevance.minilm.v1 --sets summeval --no-write

Each set is one ``lfqa-rubric validate --human`` run into ``--work`` (its report.md has every level); the rows kept
are each version against the aspect of its own name, summary level, beside length. Written rows replace the rows of
the same version and data set; the others stay.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The shared aspect sets: file, the validate --human arguments, and how the registry names the data.
SETS = {
    "summeval": ("summeval_dev.jsonl",
                 ["--format", "jsonl", "--map", "question=source,answer=text,source=doc_id,system=model_id,"
                  "reference=source", "--aspects", "coherence,factuality=consistency,fluency,relevance"],
                 "SummEval dev half: 50 CNN/DM documents x 16 systems, experts' mean; the article as question and "
                 "reference"),
    "topical_chat": ("topical_chat_usr.jsonl",
                     ["--format", "jsonl", "--map", "question=source,answer=text,system=system,reference=context",
                      "--aspects", "coherence,fluency=naturalness,factuality=groundedness"],
                     "Topical-Chat USR: 60 dialogues x 6 replies; naturalness as fluency, groundedness as factuality"),
    "trec": ("TREC-DL-NF.json", ["--format", "graded", "--aspects", "relevance"],
             "TREC-DL-NF: 55 questions' passages graded 0-3 for relevance by people"),
}
DATA_FILE = ROOT / "rubric" / "data" / "agreement.json"


def main(argv=None) -> int:
    from rubric.presets import CPU
    from rubric.validity import read_agreement, registry_rows

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--versions", default=",".join([*CPU.rubric_versions.values(), *CPU.signals.values()]),
                   help="comma-separated rubric versions (default: the cpu preset's, its signals included)")
    p.add_argument("--minilm-encoder", default=CPU.minilm_encoder,
                   help="how the MiniLM versions encode (default: the cpu preset's, so its rows are the preset's)")
    p.add_argument("--sets", default=",".join(SETS), help=f"of {', '.join(SETS)}")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    p.add_argument("--work", default="agreement-runs", help="where the validate --human runs write (reused)")
    p.add_argument("--no-write", dest="write", action="store_false", help="print the rows, keep the data file")
    args = p.parse_args(argv)
    cli = str(Path(sys.executable).parent / "lfqa-rubric")
    rows = []
    for name in args.sets.split(","):
        file, extra, data = SETS[name]
        out = Path(args.work) / name
        cmd = [cli, "validate", str(Path(args.data) / file), "--human", *extra, "--rubrics", args.versions,
               "--minilm-encoder", args.minilm_encoder, "--out", str(out), "--quiet"]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        rows += registry_rows(read_agreement(out)["table"], data)
    for r in rows:
        r["encoder"] = f"MiniLM {args.minilm_encoder}"
        print(json.dumps(r))
    if args.write:
        doc = json.loads(DATA_FILE.read_text()) if DATA_FILE.is_file() else {"rows": []}
        keys = {(r["version"], r["data"]) for r in rows}
        kept = [r for r in doc["rows"] if (r["version"], r["data"]) not in keys]
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        doc = {"command": "python scripts/measure_agreement.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "commit": commit, "rows": kept + rows}
        DATA_FILE.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {len(rows)} rows to {DATA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
