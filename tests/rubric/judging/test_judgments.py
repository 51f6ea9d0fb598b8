"""The judgments table's schema: building, validating, reading, and the one-row-per-order check."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.errors import ConfigError, InputError
from rubric.judging.judgments import (JUDGMENT_COLUMNS, JUDGMENTS_FILE, check_both_orders, judgments_table, pair_decisions,
                              read_judgments, validate_judgments, write_judgments)


def row(pair="p1", order="ab", judge="judge.plain.v1", **changes) -> dict:
    """One valid row; ``changes`` overrides (or, with a value of ``...``, removes) columns."""
    r = {"pair_id": pair, "question_id": "q1", "answer_id_a": "x", "answer_id_b": "y", "label": "a",
         "split": "test", "n_words_a": 10, "n_words_b": 5, "judge": judge, "mode": "logprob", "order": order,
         "p_a": 0.7, "p_tie": None, "decision": "a", "p_a_debiased": 0.65, "decision_debiased": "a", "error": None,
         "model": "HuggingFaceTB/SmolLM2-135M-Instruct", "model_revision": None, "template_hash": "abc123",
         "backend": "transformers"}
    r.update(changes)
    return {k: v for k, v in r.items() if v is not ...}


def test_rows_become_a_typed_table_with_extra_columns_kept_last():
    table = judgments_table([row(order="ab", p_a=1, text="A is better"), row(order="ba", p_a=0.6, text=None)])
    assert table.column_names == [*JUDGMENT_COLUMNS, "text"]
    for name, typ in JUDGMENT_COLUMNS.items():
        assert table.schema.field(name).type == typ, name
    assert table.column("p_a").to_pylist() == [1.0, 0.6]  # an int probability becomes a float
    assert table.column("text").to_pylist() == ["A is better", None]
    assert table.column("model_revision").null_count == 2


def test_no_rows_is_an_empty_table_with_the_schema():
    table = judgments_table([])
    assert table.num_rows == 0 and table.column_names == list(JUDGMENT_COLUMNS)


@pytest.mark.parametrize("changes, message", [
    ({"order": ...}, "judgments: missing column 'order' (row 1, and 1 row(s) in all)"),
    ({"p_a": "0.7"}, "judgments: column 'p_a' must be a float or null, got str '0.7' (row 1)"),
    ({"n_words_a": 3.5}, "judgments: column 'n_words_a' must be an int, got float 3.5 (row 1)"),
    ({"n_words_b": True}, "judgments: column 'n_words_b' must be an int, got bool True (row 1)"),
    ({"judge": None}, "judgments: column 'judge' must have a value, got None (row 1)"),
    ({"pair_id": 7}, "judgments: column 'pair_id' must be a str, got int 7 (row 1)"),
    ({"order": "AB"}, "judgments: column 'order' must be one of ab, ba, got ['AB']"),
    ({"mode": "sample"}, "judgments: column 'mode' must be one of logprob, vote, got ['sample']"),
    ({"decision": "A"}, "judgments: column 'decision' must be one of a, b, tie or null, got ['A']"),
    ({"split": "validation"}, "judgments: column 'split' must be one of train, dev, test, got ['validation']"),
    ({"p_a": 1.5}, "judgments: column 'p_a' must hold probabilities in [0, 1], got values from 0.7 to 1.5"),
    ({"p_a_debiased": float("nan")},
     "judgments: column 'p_a_debiased' holds NaN; write null for a missing probability"),
    ({"n_words_a": -1}, "judgments: column 'n_words_a' must be >= 0, got -1"),
    ({"answer_id_b": ""}, "judgments: column 'answer_id_b' holds an empty string"),
])
def test_a_bad_second_row_is_named(changes, message):
    with pytest.raises(ConfigError) as e:
        judgments_table([row(order="ab"), row(**{"order": "ba", **changes})])
    assert str(e.value) == message


def test_validate_accepts_arrow_variants_and_casts_them():
    cols = {c: [v] for c, v in row().items()}
    table = pa.table({**cols, "pair_id": pa.array(["p1"], type=pa.large_string()),
                      "n_words_a": pa.array([10], type=pa.int32()), "p_a": pa.array([1], type=pa.int8()),
                      "error": pa.array([None]), "p_tie": pa.array([None])})
    assert table.schema.field("error").type == pa.null()
    out = validate_judgments(table)
    assert out.schema.field("pair_id").type == pa.string()
    assert out.schema.field("n_words_a").type == pa.int64()
    assert out.column("p_a").to_pylist() == [1.0]
    assert out.schema.field("error").type == pa.string()


@pytest.mark.parametrize("column, array, message", [
    ("n_words_a", pa.array([10.0]), "judgments: column 'n_words_a' must be of type int64, got double"),
    ("judge", pa.array([None], type=pa.string()), "judgments: column 'judge' has 1 null value(s); it needs a value on "
                                                  "every row"),
    ("judge", pa.array([None]), "judgments: column 'judge' must be of type string, got null"),
])
def test_validate_rejects_wrong_arrow_types(column, array, message):
    table = pa.table({**{c: [v] for c, v in row().items()}, column: array})
    with pytest.raises(ConfigError) as e:
        validate_judgments(table)
    assert str(e.value) == message


def test_validate_lists_every_missing_column():
    table = pa.table({c: [v] for c, v in row().items() if c not in ("backend", "mode")})
    with pytest.raises(ConfigError, match=r"missing column\(s\) 'mode', 'backend'"):
        validate_judgments(table)


def test_write_then_read_round_trips(tmp_path):
    table = judgments_table([row(order="ab"), row(order="ba", decision="b", p_a=0.4)])
    path = write_judgments(table, tmp_path / "out")
    assert path == tmp_path / "out" / JUDGMENTS_FILE
    assert read_judgments(tmp_path / "out").equals(table)


def test_read_refuses_a_folder_that_is_not_one_runs_set(tmp_path):
    """analyze and report read judgments the way fit reads pairs: a half-published folder, or a file that
    differs from what the manifest records, is refused."""
    import json

    from rubric.io import MANIFEST, PUBLISHING

    out = tmp_path / "out"
    path = write_judgments(judgments_table([row(order="ab"), row(order="ba")]), out)
    (out / MANIFEST).write_text(json.dumps({"published": {JUDGMENTS_FILE: path.stat().st_size}}))
    assert read_judgments(out).num_rows == 2
    (out / PUBLISHING).write_text("{}")
    with pytest.raises(InputError, match="being written, or a job was killed"):
        read_judgments(out)
    (out / PUBLISHING).unlink()
    (out / MANIFEST).write_text(json.dumps({"published": {JUDGMENTS_FILE: path.stat().st_size + 1}}))
    with pytest.raises(InputError, match="the folder mixes two runs' files"):
        read_judgments(out)


def test_read_names_the_file_when_absent_damaged_or_off_schema(tmp_path):
    with pytest.raises(InputError, match=f"{tmp_path / JUDGMENTS_FILE} not found: run 'lfqa-rubric judge"):
        read_judgments(tmp_path)
    (tmp_path / JUDGMENTS_FILE).write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=rf"cannot read {tmp_path / JUDGMENTS_FILE} \(damaged or not Parquet\)"):
        read_judgments(tmp_path)
    pq.write_table(pa.table({c: [v] for c, v in row(order="sideways").items()}), tmp_path / JUDGMENTS_FILE)
    with pytest.raises(InputError) as e:
        read_judgments(tmp_path)
    assert str(e.value) == (f"{tmp_path / JUDGMENTS_FILE}: judgments: column 'order' must be one of ab, ba, "
                            "got ['sideways']")


def test_check_both_orders_lists_every_problem():
    rows = [
        row("p1", "ab"), row("p1", "ba"),                                   # fine
        row("p1", "ab", judge="judge.cot.v1"), row("p1", "ba", judge="judge.cot.v1"),  # fine: another judge
        row("p2", "ab"),                                                    # no ba row
        row("p3", "ab"), row("p3", "ab"), row("p3", "ba"),                  # two ab rows
        row("p4", "ab"), row("p4", "ba", decision_debiased="b"),            # debiased differs
        row("p5", "ab"), row("p5", "ba", label="b"),                        # the pair itself differs
        row("p6", "ab", mode="vote"), row("p6", "ba"),                      # mode differs
        row("p7", "ab", p_a_debiased=0.65), row("p7", "ba", p_a_debiased=0.65 + 1e-12),  # same mean: fine
    ]
    assert check_both_orders(judgments_table(rows)) == [
        "pair 'p2', judge 'judge.plain.v1': 1 'ab' row(s) and 0 'ba' row(s), expected one of each",
        "pair 'p3', judge 'judge.plain.v1': 2 'ab' row(s) and 1 'ba' row(s), expected one of each",
        "pair 'p4', judge 'judge.plain.v1': decision_debiased differs between its rows ('a', 'b')",
        "pair 'p6', judge 'judge.plain.v1': mode differs between its rows ('logprob', 'vote')",
        "pair 'p5': label differs between its rows ('a', 'b')",
    ]


def test_check_both_orders_is_empty_for_a_complete_table():
    rows = [row(p, o, judge=j) for p in ("p1", "p2") for j in ("judge.plain.v1", "judge.cot.v1") for o in ("ab", "ba")]
    assert check_both_orders(judgments_table(rows)) == []


def test_pair_decisions_reads_one_judges_ab_rows():
    table = judgments_table([
        row("p1", "ba", "judge.cot.v1", decision_debiased="b"), row("p1", "ab", "judge.plain.v1"),
        row("p1", "ba", "judge.plain.v1"), row("p2", "ab", "judge.plain.v1", decision_debiased=None, decision=None),
        row("p2", "ab", "judge.cot.v1", decision_debiased="tie", decision="tie"),
    ])
    assert pair_decisions(table) == ("judge.plain.v1", {"p1": "a", "p2": None})  # the first "ab" row's judge
    assert pair_decisions(table, "judge.cot.v1") == ("judge.cot.v1", {"p2": "tie"})
    assert pair_decisions(judgments_table([])) == ("", {})
