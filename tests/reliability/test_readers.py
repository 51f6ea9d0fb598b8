"""Readers lose nothing and mix nothing: every record is read whole or rejected by name, once.

Each test builds its own bad input under ``tmp_path`` and checks the row accounting
(``rows_in == rows_ok + len(rejects)``) as well as the behaviour.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from rubric.io import (
    DEFAULT_MAX_QUESTION_CHARS,
    ReadResult,
    read_graded,
    read_graded_labels,
    read_input,
    read_lfqa_eval,
    read_lfqa_hp,
    read_table,
)
from rubric.io.records import PairRecord, content_id, question_id

ANSWER = "An answer that is long enough to read and to score."
TABLE_MAP = "question=q,answer_a=x,answer_b=y,label=l"


def _hp(i: int, **kw) -> dict:
    rec = {"id": f"p{i}", "question_text": f"Why is question {i} interesting?", "answer_1": f"First. {ANSWER}",
           "answer_2": f"Second. {ANSWER}", "human_judgment": "answer_1"}
    rec.update(kw)
    return rec


def _ev(i: int, **kw) -> dict:
    rec = {"id": f"e{i}", "question": f"What is thing {i}?", "answer_a": f"A. {ANSWER}", "answer_b": f"B. {ANSWER}",
           "overall_preference": -1}
    rec.update(kw)
    return rec


def _tab(i: int, **kw) -> dict:
    rec = {"q": f"How does {i} work?", "x": f"X. {ANSWER}", "y": f"Y. {ANSWER}", "l": "a"}
    rec.update(kw)
    return rec


def _jsonl(path: Path, records: list, **dump) -> Path:
    path.write_text("".join(json.dumps(r, **dump) + "\n" for r in records), encoding="utf-8")
    return path


def _csv(path: Path, records: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(records[0]))
        w.writeheader()
        w.writerows(records)
    return path


def _parquet(path: Path, records: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def _accounted(res: ReadResult) -> None:
    """Pair formats: one pair per accepted record, and every record is a pair or a reject."""
    assert res.rows_in == res.rows_ok + len(res.rejects)
    assert res.rows_ok == len(res.pairs)
    assert sorted([p.row for p in res.pairs] + [r.row for r in res.rejects]) == list(range(res.rows_in))


def _graded_accounted(res: ReadResult, answers: dict[int, int]) -> None:
    """Graded lists: every answer (question index -> answer count) is in a pair or rejected, never both."""
    paired = {(p.row, k) for p in res.pairs for k in p.pair_id.split(":")[1:]}
    rejected = [(r.row, r.extra["answer"]) for r in res.rejects]
    assert len(rejected) == len(set(rejected)), "an answer was rejected twice"
    assert not paired & set(rejected), "an answer is both paired and rejected"
    expected = {(q, str(k)) for q, n in answers.items() for k in range(n)}
    assert paired | set(rejected) == expected
    assert res.rows_in == sum(answers.values()) == res.rows_ok + len(res.rejects)
    assert res.rows_ok == len(paired)


def _write_graded(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- 1. record boundaries

# Characters str.splitlines() breaks at that are ordinary characters inside a JSON or CSV field.
LINE_BREAKS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("char", LINE_BREAKS, ids=[f"U+{ord(c):04X}" for c in LINE_BREAKS])
@pytest.mark.parametrize("kind", ["jsonl", "json-list", "csv", "lfqa-eval"])
def test_unicode_line_breaks_inside_a_field_do_not_split_the_record(tmp_path, kind, char):
    answer = f"One.{char}Two."
    question = f"Why{char} this?"
    if kind == "jsonl":
        res = read_lfqa_hp(_jsonl(tmp_path / "u.jsonl", [_hp(0, answer_1=answer, question_text=question), _hp(1)],
                                  ensure_ascii=False))
        got = res.pairs[0].answer_a
    elif kind == "json-list":
        path = tmp_path / "u.json"
        path.write_text(json.dumps([_hp(0, answer_1=answer, question_text=question), _hp(1)], ensure_ascii=False),
                        encoding="utf-8")
        res = read_lfqa_hp(path)
        got = res.pairs[0].answer_a
    elif kind == "lfqa-eval":
        res = read_lfqa_eval(_jsonl(tmp_path / "u.jsonl", [_ev(0, answer_b=answer, question=question), _ev(1)],
                                    ensure_ascii=False))
        got = res.pairs[0].answer_b
    else:
        res = read_table(_csv(tmp_path / "u.csv", [_tab(0, x=answer, q=question), _tab(1)]), TABLE_MAP)
        got = res.pairs[0].answer_a
    assert res.rejects == [] and len(res.pairs) == 2 and res.rows_in == 2
    assert got == answer and res.pairs[0].question == question
    _accounted(res)


def test_repro_from_the_issue_reads_one_pair(tmp_path):
    path = tmp_path / "u.jsonl"
    path.write_text(json.dumps({"question_text": "Why?", "answer_1": "One.\u2028Two.", "answer_2": "B.",
                                "human_judgment": "tie"}, ensure_ascii=False) + "\n", encoding="utf-8")
    res = read_lfqa_hp(path)
    assert [(p.answer_a, p.label) for p in res.pairs] == [("One.\u2028Two.", "tie")]
    _accounted(res)


def test_csv_quoted_newlines_and_crlf_still_work(tmp_path):
    # csv.DictWriter ends records with \r\n; the answer holds \n, \r\n and a lone \r inside quotes.
    answer = "Line one.\nLine two.\r\nLine three.\rEnd."
    path = _csv(tmp_path / "t.csv", [_tab(0, x=answer), _tab(1), _tab(2, y="Plain, with a comma.")])
    assert b"\r\n" in path.read_bytes()
    res = read_table(path, TABLE_MAP)
    assert [p.answer_a for p in res.pairs][0] == answer
    assert res.pairs[2].answer_b == "Plain, with a comma." and res.pairs[2].label == "a"
    _accounted(res)


def test_jsonl_crlf_line_ends_leave_no_carriage_return(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_bytes(b"".join(json.dumps(_hp(i)).encode() + b"\r\n" for i in range(3)) + b"\r\n")
    res = read_lfqa_hp(path)
    assert len(res.pairs) == 3 and res.rows_in == 3
    assert all("\r" not in p.answer_b for p in res.pairs)
    _accounted(res)


def test_no_splitlines_left_in_rubric():
    root = Path(__file__).resolve().parents[2] / "rubric"
    offenders = [str(f) for f in root.rglob("*.py") if ".splitlines(" in f.read_text(encoding="utf-8")]
    assert offenders == []


# ----------------------------------------------------------------------------- 2. encodings

ENCODINGS = {
    # name: (bytes of the text, the encoding named in the message)
    "utf-16-bom-le": (lambda t: b"\xff\xfe" + t.encode("utf-16-le"), "UTF-16 LE"),
    "utf-16-bom-be": (lambda t: b"\xfe\xff" + t.encode("utf-16-be"), "UTF-16 BE"),
    "utf-16-le": (lambda t: t.encode("utf-16-le"), "UTF-16 LE"),
    "utf-16-be": (lambda t: t.encode("utf-16-be"), "UTF-16 BE"),
    "utf-32-bom-le": (lambda t: b"\xff\xfe\x00\x00" + t.encode("utf-32-le"), "UTF-32 LE"),
    "utf-32-bom-be": (lambda t: b"\x00\x00\xfe\xff" + t.encode("utf-32-be"), "UTF-32 BE"),
    "utf-32-le": (lambda t: t.encode("utf-32-le"), "UTF-32 LE"),
    "utf-32-be": (lambda t: t.encode("utf-32-be"), "UTF-32 BE"),
}


@pytest.mark.parametrize("enc", list(ENCODINGS))
@pytest.mark.parametrize("fmt", ["lfqa-hp", "csv", "graded"])
def test_utf16_and_utf32_files_raise_one_clear_error(tmp_path, enc, fmt):
    encode, name = ENCODINGS[enc]
    if fmt == "lfqa-hp":
        path, text = tmp_path / "w.jsonl", "".join(json.dumps(_hp(i)) + "\n" for i in range(20))
        read = read_lfqa_hp
    elif fmt == "csv":
        path, text = tmp_path / "w.csv", "q,x,y,l\n" + "".join(f"Q{i}?,Ans {i},Other {i},a\n" for i in range(20))

        def read(p):
            return read_table(p, TABLE_MAP)
    else:
        path, text = tmp_path / "w.json", json.dumps({"why?": [{"passage": "Good.", "label": 2},
                                                               {"passage": "Bad.", "label": 0}]})
        read = read_graded
    path.write_bytes(encode(text))
    with pytest.raises(InputError) as exc:
        read(path)
    msg = str(exc.value)
    assert msg.startswith(f"{str(path)!r} is not UTF-8 text (looks like {name}")
    assert "iconv -f UTF-" in msg and "-t UTF-8" in msg


def test_utf8_bom_is_accepted_and_stray_bytes_stay_row_rejects(tmp_path):
    lines = [json.dumps(_hp(i)).encode() for i in range(4)]
    lines[2] = lines[2].replace(b"Second.", b"Sec\xe9ond.", 1)  # a Latin-1 byte in a UTF-8 file
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
    res = read_lfqa_hp(path)
    assert [p.pair_id for p in res.pairs] == ["p0", "p1", "p3"]
    (rej,) = res.rejects
    assert rej.row == 2 and rej.field == "answer_2" and "not valid UTF-8" in rej.reason
    _accounted(res)


def test_files_concatenated_with_their_boms_read_whole(tmp_path):
    one = b"\xef\xbb\xbf" + json.dumps(_hp(0)).encode() + b"\n"
    two = b"\xef\xbb\xbf" + json.dumps(_hp(1)).encode() + b"\n"
    path = tmp_path / "cat.jsonl"
    path.write_bytes(one + two)  # `cat a.jsonl b.jsonl`
    res = read_lfqa_hp(path)
    assert [p.pair_id for p in res.pairs] == ["p0", "p1"] and res.rejects == []
    _accounted(res)


@pytest.mark.parametrize("make, err", [
    (lambda recs: gzip.compress(recs), "gzip-compressed"),
    (lambda recs: b"PAR1\x00\x00\x15\x04" + recs, "looks like Parquet"),
    (lambda recs: recs[:40] + b"\x00\x01\x02\x03\xff" * 30 + recs[40:], "NUL bytes"),
])
def test_binary_data_under_a_text_name_is_input_error(tmp_path, make, err):
    path = tmp_path / "data.jsonl"
    path.write_bytes(make("".join(json.dumps(_hp(i)) + "\n" for i in range(5)).encode()))
    with pytest.raises(InputError, match=err):
        read_lfqa_hp(path)


# ----------------------------------------------------------------------------- 3. empty inputs


def _empty_parquet(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(k, pa.string()) for k in ("question_text", "answer_1", "answer_2", "human_judgment")])
    pq.write_table(schema.empty_table(), path)
    return path


@pytest.mark.parametrize("name, content, read", [
    ("empty.jsonl", "", read_lfqa_hp),
    ("blank.jsonl", "\n  \n\r\n\t\n", read_lfqa_hp),
    ("list.json", "[]", read_lfqa_hp),
    ("eval.jsonl", "\n", read_lfqa_eval),
    ("header.csv", "q,x,y,l\r\n", lambda p: read_table(p, TABLE_MAP)),
    ("nothing.csv", "", lambda p: read_table(p, TABLE_MAP)),
    ("graded.json", "{}", read_graded),
    ("no-answers.json", '{"why?": [], "how?": {"doc_list": []}}', read_graded),
    ("labels.json", "{}", read_graded_labels),
])
def test_a_file_with_no_records_is_input_error(tmp_path, name, content, read):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="holds no records") as exc:
        read(path)
    assert str(path) in str(exc.value)


def test_a_parquet_with_no_rows_is_input_error(tmp_path):
    path = _empty_parquet(tmp_path / "empty.parquet")
    with pytest.raises(InputError, match=r"empty\.parquet.* holds no records"):
        read_lfqa_hp(path)
    with pytest.raises(InputError, match="holds no records"):
        read_input(path, "parquet", mapping="question=question_text,answer_a=answer_1,answer_b=answer_2,"
                                           "label=human_judgment")


# ----------------------------------------------------------------------------- 4. graded lists


def test_graded_accepts_any_integer_scale(tmp_path):
    # ANTIQUE grades 1-4; a scale can also be negative or wider
    data = {"why is the sky blue": [{"passage": f"Answer graded {g}.", "label": g} for g in (1, 2, 3, 4)],
            "how do magnets work": [{"passage": f"Magnet answer {g}.", "label": g} for g in (-1, 10)]}
    res = read_graded(_write_graded(tmp_path / "antique.json", data))
    assert res.rejects == []
    assert len(res.pairs) == 6 + 1
    for p in res.pairs:
        ga, gb = (int(t.split()[-1].rstrip(".")) for t in (p.answer_a, p.answer_b))
        assert p.label == ("a" if ga > gb else "b")
    _graded_accounted(res, {0: 4, 1: 2})
    labels = read_graded_labels(tmp_path / "antique.json")
    assert labels[content_id("why is the sky blue", "Answer graded 4.")] == (question_id("why is the sky blue"), 4)


@pytest.mark.parametrize("label", ["high", "2", 1.5, True, False, [3], {"grade": 2}])
def test_graded_rejects_non_integer_grades(tmp_path, label):
    data = {"what is rain": [{"passage": "Water falling.", "label": 3}, {"passage": "Odd grade.", "label": label},
                             {"passage": "Wet.", "label": 1}]}
    res = read_graded(_write_graded(tmp_path / "g.json", data))
    (rej,) = res.rejects
    assert (rej.row, rej.field, rej.extra["answer"]) == (0, "label", "1")
    assert f"has value {label!r}; expected an integer grade" in rej.reason
    assert len(res.pairs) == 1
    _graded_accounted(res, {0: 3})


def test_graded_integral_float_grade_is_an_integer(tmp_path):
    data = {"what is rain": [{"passage": "Water falling.", "label": 3.0}, {"passage": "Wet.", "label": 1}]}
    res = read_graded(_write_graded(tmp_path / "g.json", data))
    assert len(res.pairs) == 1 and res.rejects == []
    _graded_accounted(res, {0: 2})


def test_graded_repeated_question_key_is_reported_not_dropped(tmp_path):
    first = json.dumps([{"passage": "Good one.", "label": 3}, {"passage": "Weak one.", "label": 1},
                        {"passage": "Bad one.", "label": 0}])
    second = json.dumps([{"passage": "Another good.", "label": 2}, {"passage": "Another bad.", "label": 0}])
    other = json.dumps([{"passage": "Yes.", "label": 1}, {"passage": "No.", "label": 0}])
    path = tmp_path / "dup.json"
    path.write_text(f'{{"what is wifi": {first}, "other question": {other}, "what is wifi": {second}}}',
                    encoding="utf-8")
    res = read_graded(path)
    # the first occurrence is used: its answers pair; the repeat's 2 answers become rejects
    assert {p.answer_a for p in res.pairs if p.row == 0} | {p.answer_b for p in res.pairs if p.row == 0} == \
        {"Good one.", "Weak one.", "Bad one."}
    assert [(r.row, r.extra["answer"], r.field) for r in res.rejects] == [(2, "0", "question"), (2, "1", "question")]
    assert res.rejects[0].reason == ("question 2 ('what is wifi') answer 0: question 2 repeats question 0 "
                                     "(same text); its 2 answers are not used")
    _graded_accounted(res, {0: 3, 1: 2, 2: 2})
    labels = read_graded_labels(path)
    assert content_id("what is wifi", "Good one.") in labels
    assert content_id("what is wifi", "Another good.") not in labels


def test_graded_question_repeated_up_to_whitespace_does_not_collide_pair_ids(tmp_path):
    data = {"what is wifi": [{"passage": "Good one.", "label": 3}, {"passage": "Weak one.", "label": 1}],
            "what  is wifi ": [{"passage": "Other good.", "label": 3}, {"passage": "Other weak.", "label": 1}]}
    res = read_graded(_write_graded(tmp_path / "g.json", data))
    assert len({p.pair_id for p in res.pairs}) == len(res.pairs) == 1
    assert {r.row for r in res.rejects} == {1}
    assert "repeats question 0 (same text up to whitespace)" in res.rejects[0].reason
    _graded_accounted(res, {0: 2, 1: 2})


def test_graded_answers_in_no_pair_become_named_rejects(tmp_path):
    data = {
        # 0: all the same grade
        "same grade question": [{"passage": f"Answer {i}.", "label": 2} for i in range(3)],
        # 1: a single answer
        "lonely question": [{"passage": "Only answer.", "label": 1}],
        # 2: answer 3 repeats answer 0's text (with another grade), answer 4 repeats answer 1's
        "repeated text question": [{"passage": "Alpha.", "label": 3}, {"passage": "Beta.", "label": 1},
                                   {"passage": "Gamma.", "label": 0}, {"passage": "Alpha.", "label": 1},
                                   {"passage": "Beta.", "label": 1}],
        # 3: six grades, capped to one pair: four answers are left out
        "capped question": [{"passage": f"Graded {g}.", "label": g} for g in range(6)],
    }
    res = read_graded(_write_graded(tmp_path / "g.json", data), max_pairs_per_question=1)
    by = {(r.row, r.extra["answer"]): r for r in res.rejects}
    assert by[(0, "1")].reason == ("question 0 ('same grade question') answer 1: answer 1 is in no pair: "
                                   "every other usable answer of the question has grade 2")
    assert {k for k in by if k[0] == 0} == {(0, "0"), (0, "1"), (0, "2")}
    assert by[(1, "0")].reason.endswith("answer 0 is in no pair: it is the only usable answer of the question")
    assert by[(2, "3")].reason.endswith("answer 3 has the same text as answer 0 (grades 3 and 1); "
                                        "only the first is used")
    assert by[(2, "4")].reason.endswith("answer 4 has the same text as answer 1; only the first is used")
    capped = [k for k in by if k[0] == 3]
    assert len(capped) == 4
    assert all(by[k].reason.endswith(f"answer {k[1]} was left out by --max-pairs-per-question 1") for k in capped)
    assert {r.field for r in res.rejects} == {"pairing"}
    # question 2 keeps Alpha/Beta/Gamma, three grades -> capped to one pair, so one of them is left out too
    assert sum(1 for k in by if k[0] == 2) == 3
    assert len(res.pairs) == 2
    _graded_accounted(res, {0: 3, 1: 1, 2: 5, 3: 6})


def test_graded_item_without_text_names_all_three_fields(tmp_path):
    data = {"why": [{"docid": "1", "label": 2}, {"passage": None, "answer": "Fallback text.", "label": 1},
                    {"text": "Third.", "label": 0}]}
    res = read_graded(_write_graded(tmp_path / "g.json", data))
    (rej,) = res.rejects
    assert rej.extra["answer"] == "0"
    assert rej.reason.endswith("missing answer text: expected a field 'passage', 'answer' or 'text'")
    assert {p.answer_a for p in res.pairs} | {p.answer_b for p in res.pairs} == {"Fallback text.", "Third."}
    _graded_accounted(res, {0: 3})


def test_graded_non_object_answers_and_repeated_item_keys(tmp_path):
    path = tmp_path / "g.json"
    path.write_text('{"why": [{"passage": "Good.", "label": 3}, "just text", 7, null,'
                    ' {"passage": "Mixed.", "label": 0, "label": 2}, {"passage": "Bad.", "label": 0}]}',
                    encoding="utf-8")
    res = read_graded(path)
    by = {r.extra["answer"]: r.reason for r in res.rejects}
    assert set(by) == {"1", "2", "3", "4"}
    assert "answer is a str, expected an object" in by["1"] and "answer is a NoneType" in by["3"]
    assert "field 'label' appears more than once" in by["4"]
    _graded_accounted(res, {0: 6})


# ----------------------------------------------------------------------------- 5. texts with no letters

NO_LETTERS = ["\u200b\u200b", "...!!!", "42", "1 + 1 = 2", "$$$ %%% ***", "\u00a0\u200d", "\u2192 \u2605 \u2665"]
NO_LETTERS_REASON = "has no letters (only punctuation, digits, symbols or invisible characters)"


@pytest.mark.parametrize("text", NO_LETTERS)
@pytest.mark.parametrize("fmt", ["lfqa-hp", "lfqa-eval", "csv", "parquet", "graded"])
def test_answers_with_no_letters_are_rejected_in_every_format(tmp_path, fmt, text):
    if fmt == "lfqa-hp":
        res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", [_hp(0), _hp(1, answer_1=text)], ensure_ascii=False))
        field = "'answer_1'"
    elif fmt == "lfqa-eval":
        res = read_lfqa_eval(_jsonl(tmp_path / "e.jsonl", [_ev(0), _ev(1, answer_b=text)]))
        field = "'answer_b'"
    elif fmt == "csv":
        res = read_table(_csv(tmp_path / "t.csv", [_tab(0), _tab(1, y=text)]), TABLE_MAP)
        field = "'answer_b' (column 'y')"
    elif fmt == "parquet":
        res = read_table(_parquet(tmp_path / "t.parquet", [_tab(0), _tab(1, x=text)]), TABLE_MAP)
        field = "'answer_a' (column 'x')"
    else:
        res = read_graded(_write_graded(tmp_path / "g.json", {"why": [
            {"passage": "Real words.", "label": 2}, {"passage": text, "label": 1}, {"passage": "More words.", "label": 0}]}))
        (rej,) = res.rejects
        assert rej.extra["answer"] == "1" and rej.reason.endswith(f"field 'passage' {NO_LETTERS_REASON}")
        _graded_accounted(res, {0: 3})
        return
    (rej,) = res.rejects
    assert rej.row == 1 and rej.reason == f"row 1: field {field} {NO_LETTERS_REASON}"
    _accounted(res)


@pytest.mark.parametrize("text", ["...", "???", "123", "\u200b"])
def test_questions_with_no_letters_are_rejected(tmp_path, text):
    res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", [_hp(0, question_text=text), _hp(1)], ensure_ascii=False))
    assert [r.reason for r in res.rejects] == [f"row 0: field 'question_text' {NO_LETTERS_REASON}"]
    _accounted(res)
    res = read_graded(_write_graded(tmp_path / "g.json", {text: [{"passage": "Good.", "label": 1},
                                                                 {"passage": "Bad.", "label": 0}]}))
    assert res.pairs == [] and all(NO_LETTERS_REASON in r.reason for r in res.rejects)
    _graded_accounted(res, {0: 2})


@pytest.mark.parametrize("text", ["水是湿的", "नमस्ते", "Ça va? 42!", "x", "\u200bword\u200b"])
def test_texts_with_letters_in_any_script_are_kept(tmp_path, text):
    res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", [_hp(0, answer_2=text, question_text=text)], ensure_ascii=False))
    assert res.rejects == [] and res.pairs[0].answer_b == text
    _accounted(res)


# ----------------------------------------------------------------------------- 6. question length


def test_scoring_config_has_a_validated_question_limit():
    assert ScoringConfig().max_question_chars == DEFAULT_MAX_QUESTION_CHARS == 20_000
    assert ScoringConfig(max_question_chars=5).max_question_chars == 5
    with pytest.raises(ConfigError, match="'max_question_chars' must be >= 1, got 0"):
        ScoringConfig(max_question_chars=0)


QUESTION_LIMIT = ("field {f} is 300 characters long, over the limit of 200 "
                  "(raise it with --max-question-chars / max_question_chars)")


@pytest.mark.parametrize("fmt", ["lfqa-hp", "lfqa-eval", "jsonl", "csv", "parquet"])
def test_long_questions_are_rejected_by_every_pair_reader(tmp_path, fmt):
    long_q = "Why " + "q" * 295 + "?"
    assert len(long_q) == 300
    if fmt == "lfqa-hp":
        path, f = _jsonl(tmp_path / "h.jsonl", [_hp(0), _hp(1, question_text=long_q)]), "'question_text'"
        res = read_input(path, "lfqa-hp", max_question_chars=200)
    elif fmt == "lfqa-eval":
        path, f = _jsonl(tmp_path / "e.jsonl", [_ev(0), _ev(1, question=long_q)]), "'question'"
        res = read_input(path, "lfqa-eval", max_question_chars=200)
    else:
        recs = [_tab(0), _tab(1, q=long_q)]
        path = {"jsonl": _jsonl, "csv": _csv, "parquet": _parquet}[fmt](tmp_path / f"t.{fmt}", recs)
        res = read_input(path, fmt, mapping=TABLE_MAP, max_question_chars=200)
        f = "'question' (column 'q')"
    (rej,) = res.rejects
    assert rej.row == 1 and rej.reason == "row 1: " + QUESTION_LIMIT.format(f=f)
    _accounted(res)


def test_default_question_limit_and_bad_option(tmp_path):
    path = _jsonl(tmp_path / "h.jsonl", [_hp(0, question_text="Why " + "q" * 25_000), _hp(1)])
    res = read_lfqa_hp(path)
    assert "over the limit of 20,000" in res.rejects[0].reason and len(res.pairs) == 1
    _accounted(res)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="'max_question_chars' must be an integer >= 1"):
            read_lfqa_hp(path, max_question_chars=bad)


def test_long_graded_question_rejects_all_its_answers(tmp_path):
    long_q = "Why " + "q" * 296
    data = {long_q: [{"passage": "Good.", "label": 2}, {"passage": "Bad.", "label": 0}],
            "short question": [{"passage": "Good.", "label": 2}, {"passage": "Bad.", "label": 0}]}
    res = read_input(_write_graded(tmp_path / "g.json", data), "graded", max_question_chars=200)
    assert {p.row for p in res.pairs} == {1}
    assert [(r.row, r.extra["answer"]) for r in res.rejects] == [(0, "0"), (0, "1")]
    assert all(r.reason.endswith(QUESTION_LIMIT.format(f="'question'")) for r in res.rejects)
    _graded_accounted(res, {0: 2, 1: 2})


# ----------------------------------------------------------------------------- 7. published splits

SPLITS = [("train", "train"), ("DEV", "dev"), ("Test", "test"), ("validation", "dev"), ("valid", "dev"),
          ("VAL", "dev"), (" train ", "train"), (None, None), ("", None)]


def test_pair_record_split_is_optional_and_last():
    rec = PairRecord("p", "Q?", "A.", "B.", "a", "src", "dom", None, (), (), 3)
    assert rec.split is None and rec.row == 3
    assert PairRecord("p", "Q?", "A.", "B.", "a", split="test").split == "test"


@pytest.mark.parametrize("fmt", ["lfqa-hp", "lfqa-eval", "csv"])
def test_published_splits_are_read(tmp_path, fmt):
    if fmt == "lfqa-hp":
        recs = [_hp(i, split=v) for i, (v, _) in enumerate(SPLITS)] + [_hp(99)]
        res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", recs))
    elif fmt == "lfqa-eval":
        recs = [_ev(i, split=v) for i, (v, _) in enumerate(SPLITS)] + [_ev(99)]
        res = read_lfqa_eval(_jsonl(tmp_path / "e.jsonl", recs))
    else:
        recs = [_tab(i, fold="" if v is None else v) for i, (v, _) in enumerate(SPLITS)] + [_tab(99, fold="")]
        res = read_table(_csv(tmp_path / "t.csv", recs), TABLE_MAP + ",split=fold")
    assert res.rejects == []
    assert [p.split for p in res.pairs] == [s for _, s in SPLITS] + [None]
    _accounted(res)


@pytest.mark.parametrize("value", ["holdout", "training", "tests", 1, ["train"]])
def test_unknown_split_values_are_rejected_by_name(tmp_path, value):
    res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", [_hp(0, split="train"), _hp(1, split=value)]))
    (rej,) = res.rejects
    assert rej.row == 1 and rej.field == "split"
    assert rej.reason.startswith(f"row 1: field 'split' has value {value!r}; expected train, dev or test")
    _accounted(res)
    res = read_table(_jsonl(tmp_path / "t.jsonl", [_tab(0, fold="test"), _tab(1, fold=value)]),
                     TABLE_MAP + ",split=fold")
    (rej,) = res.rejects
    assert rej.field == "fold" and f"field 'split' (column 'fold') has value {value!r}" in rej.reason
    assert res.pairs[0].split == "test"
    _accounted(res)


# ----------------------------------------------------------------------------- other bad input


def test_json_list_with_non_objects_rejects_each_by_row(tmp_path):
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([_hp(0), 3, "text", None, [_hp(4)], _hp(5)]), encoding="utf-8")
    res = read_lfqa_hp(path)
    assert [p.pair_id for p in res.pairs] == ["p0", "p5"]
    assert [r.reason for r in res.rejects] == [
        "row 1: record is a JSON int, expected an object", "row 2: record is a JSON str, expected an object",
        "row 3: record is a JSON NoneType, expected an object", "row 4: record is a JSON list, expected an object"]
    _accounted(res)


def test_labels_that_are_lists_or_objects_are_rejected(tmp_path):
    res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", [_hp(0, human_judgment=["answer_1"]),
                                                     _hp(1, human_judgment={"answer": 1}), _hp(2)]))
    assert [r.field for r in res.rejects] == ["human_judgment"] * 2 and len(res.pairs) == 1
    _accounted(res)
    res = read_lfqa_eval(_jsonl(tmp_path / "e.jsonl", [_ev(0, overall_preference=[1]), _ev(1)]))
    assert [r.field for r in res.rejects] == ["overall_preference"]
    _accounted(res)
    res = read_table(_jsonl(tmp_path / "t.jsonl", [_tab(0, l=["a"]), _tab(1, l={"a": 1}), _tab(2)]), TABLE_MAP)
    assert [r.row for r in res.rejects] == [0, 1] and res.pairs[0].label == "a"
    _accounted(res)


def test_a_key_repeated_inside_a_record_rejects_the_record(tmp_path):
    good = json.dumps(_hp(0))
    twice = '{"id": "p1", "question_text": "Why?", "answer_1": "First.", "answer_1": "Second.", ' \
            '"answer_2": "Other.", "human_judgment": "answer_1"}'
    path = tmp_path / "h.jsonl"
    path.write_text(f"{good}\n{twice}\n", encoding="utf-8")
    res = read_lfqa_hp(path)
    (rej,) = res.rejects
    assert (rej.row, rej.field, rej.pair_id) == (1, "answer_1", "p1")
    assert rej.reason == "row 1: field 'answer_1' appears more than once in the record"
    _accounted(res)
    listed = tmp_path / "h.json"
    listed.write_text(f"[{good}, {twice}]", encoding="utf-8")
    assert [r.reason for r in read_lfqa_hp(listed).rejects] == [rej.reason]


def test_csv_record_with_a_wrong_field_count_is_rejected(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("q,x,y,l\nQ one?,Answer x,Answer y,a\nQ two?,Answer, with a comma,Answer y,b\n"
                    "Q three?,Answer x\nQ four?,Answer x,Answer y,tie\n", encoding="utf-8")
    res = read_table(path, TABLE_MAP)
    assert [p.question for p in res.pairs] == ["Q one?", "Q four?"]
    assert [r.reason for r in res.rejects] == [
        "row 1: the record ending on line 3 has 5 fields but the header has 4 (an unquoted comma or quote?)",
        "row 2: the record ending on line 4 has 2 fields but the header has 4 (an unquoted comma or quote?)",
    ]
    _accounted(res)


def test_csv_header_naming_a_column_twice_is_input_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("q,x,y,l,x\nQ?,Answer one,Answer two,a,Answer three\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"names column 'x' twice \(columns 2 and 5\)"):
        read_table(path, TABLE_MAP)


def test_one_bad_line_among_many_costs_one_row(tmp_path):
    lines = [json.dumps(_hp(i)) for i in range(6)]
    lines[3] = lines[3][:-5]  # truncated
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = read_lfqa_hp(path)
    (rej,) = res.rejects
    assert rej.row == 3 and "line 4 is not valid JSON" in rej.reason and len(res.pairs) == 5
    _accounted(res)


# ----------------------------------------------------------------------------- unlabeled pairs


def test_a_file_mixing_labeled_and_unlabeled_rows_accounts_for_every_row(tmp_path):
    no_key = _hp(3)
    del no_key["human_judgment"]
    recs = [_hp(0), _hp(1, human_judgment=None), _hp(2, human_judgment="answer_9"), no_key,
            _hp(4, human_judgment="tie"), _hp(5, answer_1="")]
    res = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", recs))
    assert [(p.row, p.label) for p in res.pairs] == [(0, "a"), (1, None), (3, None), (4, "tie")]
    assert [(r.row, r.field) for r in res.rejects] == [(2, "human_judgment"), (5, "answer_1")]
    assert (res.rows_in, res.rows_ok, res.n_unlabeled) == (6, 4, 2)
    _accounted(res)


def test_unlabeled_rows_in_every_pair_format(tmp_path):
    ev = read_lfqa_eval(_jsonl(tmp_path / "e.jsonl",
                               [_ev(0), _ev(1, overall_preference=None), _ev(2, overall_preference=7)]))
    assert [p.label for p in ev.pairs] == ["a", None] and [r.field for r in ev.rejects] == ["overall_preference"]
    _accounted(ev)
    tab = read_table(_csv(tmp_path / "t.csv", [_tab(0), _tab(1, l=""), _tab(2, l="nope")]), TABLE_MAP)
    assert [p.label for p in tab.pairs] == ["a", None] and [r.row for r in tab.rejects] == [2]
    _accounted(tab)
    pq_ = read_table(_parquet(tmp_path / "t.parquet", [_tab(0), _tab(1, l=None)]), TABLE_MAP)
    assert [p.label for p in pq_.pairs] == ["a", None]
    _accounted(pq_)


def test_the_job_counts_unlabeled_pairs_overall_and_per_input(tmp_path):
    from rubric.tables.assemble import JobInput, assemble
    from rubric.io.records import explode
    from rubric.scoring.scorer import Provenance, Score
    from rubric.scoring.specs import RUBRICS

    hp = read_lfqa_hp(_jsonl(tmp_path / "h.jsonl", [_hp(0), _hp(1, human_judgment=None), _hp(2, answer_2="")]))
    ev = read_lfqa_eval(_jsonl(tmp_path / "e.jsonl", [_ev(0, overall_preference=None), _ev(1, overall_preference=None),
                                                      _ev(2, overall_preference=1)]))
    conc = RUBRICS.get("conciseness.lexical_density.v1")
    items = explode(hp.pairs + ev.pairs)
    scores = {it.answer_id: {"conciseness": Score.ok(0.1 + 0.01 * i)} for i, it in enumerate(items)}
    job = assemble([JobInput("h", hp, "lfqa-hp"), JobInput("e", ev, "lfqa-eval")], scores,
                   {"conciseness": Provenance(conc.version, "spacy")}, [conc])
    c = job.counts
    assert (c["rows_in"], c["rows_ok"], c["rejected"], c["pairs"], c["unlabeled"]) == (6, 5, 1, 5, 3)
    assert c["rows_in"] == c["rows_ok"] + c["rejected"]
    assert {k: (v["pairs"], v["unlabeled"]) for k, v in c["per_input"].items()} == {"h": (2, 1), "e": (3, 2)}
    assert job.pairs.column("label").to_pylist() == ["a", None, None, None, "b"]


def test_reference_answers_are_read_where_the_input_has_them(tmp_path):
    import json as _json

    from rubric.io import read_graded, read_lfqa_hp, read_table

    hp = tmp_path / "hp.jsonl"
    hp.write_text("\n".join(_json.dumps(r) for r in [
        {"id": "1", "question_text": "Why?", "answer_1": "Because.", "answer_2": "No idea.", "human_judgment": "answer_1",
         "reference": "Because of reasons."},
        {"id": "2", "question_text": "How?", "answer_1": "Like this.", "answer_2": "Like that.", "human_judgment": "tie"},
        {"id": "3", "question_text": "Who?", "answer_1": "Me.", "answer_2": "You.", "human_judgment": "tie",
         "reference": 7},
    ]) + "\n")
    res = read_lfqa_hp(hp)
    assert [p.reference for p in res.pairs] == ["Because of reasons.", None]
    assert [(r.row, r.field) for r in res.rejects] == [(2, "reference")]
    csv = tmp_path / "t.csv"
    csv.write_text("q,a,b,ref\nWhy?,Yes.,No.,Because.\n")
    res = read_table(csv, "question=q,answer_a=a,answer_b=b,reference=ref")
    assert res.pairs[0].reference == "Because." and res.pairs[0].label is None
    graded = tmp_path / "g.json"
    graded.write_text(_json.dumps({"Why?": {"doc_list": [{"answer": "One.", "label": 1}, {"answer": "Two.", "label": 3}],
                                            "ground1": "Weak ref.", "ground3": "Best ref."}}))
    assert {p.reference for p in read_graded(graded).pairs} == {"Best ref."}
    assert {p.reference for p in read_graded(graded, include_references=True).pairs} == {None}
