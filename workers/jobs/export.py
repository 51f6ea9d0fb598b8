"""Tables out of a score output in other formats, and the transfer grid's inputs (what ``export`` and
``transfer`` do beyond parsing their options)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rubric.errors import RubricError

__all__ = ["write_table", "run_transfer"]


def write_table(table, dest: Path) -> None:
    """Write an Arrow table as Parquet, CSV or JSONL, by ``dest``'s suffix.

    Raises:
        RubricError: another suffix.
    """
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    suffix = dest.suffix.lower()
    if suffix == ".parquet":
        pq.write_table(table, dest)
    elif suffix == ".csv":
        pcsv.write_csv(table, dest)
    elif suffix == ".jsonl":
        with dest.open("w", encoding="utf-8") as f:
            for row in table.to_pylist():
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        raise RubricError(f"cannot export to {dest.name!r}: use .parquet, .csv or .jsonl")


def run_transfer(train: Sequence[str], evals: Sequence[str], **options):
    """``rubric.transfer.transfer`` over score output folders; one name per folder, so the same folder
    given on both sides (however spelled) is one set and its cell is in-distribution."""
    from rubric.preference import read_pairs
    from rubric.preference import transfer

    names: dict[Path, str] = {}
    for given in [*train, *evals]:
        names.setdefault(Path(given).resolve(), given)
    tables = {name: read_pairs(path) for path, name in names.items()}
    return transfer({names[Path(t).resolve()]: tables[names[Path(t).resolve()]] for t in train},
                    {names[Path(e).resolve()]: tables[names[Path(e).resolve()]] for e in evals}, **options)
