import json
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from rubric.errors import ConfigError, InputError
from rubric.io import (
    FORMATS,
    ReadResult,
    parse_mapping,
    read_graded,
    read_input,
    read_lfqa_eval,
    read_lfqa_hp,
    read_table,
)
from rubric.io.records import explode

SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
LONG = "An answer that is long enough to read. " * 3


def _hp(i, **kw):
    rec = {"id": f"p{i}", "question_text": f"Why is question {i} interesting?", "answer_1": f"first {LONG}",
           "answer_2": f"second {LONG}", "human_judgment": "answer_1", "human_expert": True,
           "domain": "science", "source": "lfqa_eval"}
    rec.update(kw)
    return rec


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _write_parquet(path, records):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def _check_accounting(res: ReadResult):
    # Pair formats: every accepted row is exactly one pair.
    assert res.rows_in == len({p.row for p in res.pairs}) + len(res.rejects)
    assert res.rows_ok == len(res.pairs)


# ----------------------------------------------------------------------------- formats


def test_lfqa_hp_jsonl_reads_all_fields(tmp_path):
    recs = [_hp(0), _hp(1, human_judgment="answer_2", human_expert=False, doc_1="evidence", doc_2=["x", "y"]),
            _hp(2, human_judgment="tie")]
    del recs[2]["id"]
    del recs[2]["human_expert"]
    res = read_lfqa_hp(_write_jsonl(tmp_path / "hp.jsonl", recs))
    assert [p.label for p in res.pairs] == ["a", "b", "tie"]
    assert [p.pair_id for p in res.pairs] == ["p0", "p1", "hp:row2"]
    assert [p.expert for p in res.pairs] == [True, False, None]
    p1 = res.pairs[1]
    assert (p1.docs_a, p1.docs_b, p1.source, p1.domain, p1.row) == (("evidence",), ("x", "y"), "lfqa_eval", "science", 1)
    assert p1.answer_a.startswith("first") and p1.answer_b.startswith("second")
    assert res.rejects == [] and res.rows_in == 3
    assert res.source_file == str(tmp_path / "hp.jsonl")
    _check_accounting(res)


@pytest.mark.parametrize("kind", ["json", "parquet"])
def test_lfqa_hp_json_list_and_parquet(tmp_path, kind):
    recs = [_hp(0), _hp(1, human_judgment="tie")]
    if kind == "json":
        path = tmp_path / "hp.json"
        path.write_text(json.dumps(recs), encoding="utf-8")
    else:
        path = _write_parquet(tmp_path / "hp.parquet", recs)
    res = read_lfqa_hp(path)
    assert [(p.pair_id, p.label, p.expert) for p in res.pairs] == [("p0", "a", True), ("p1", "tie", True)]
    _check_accounting(res)


def test_lfqa_eval_reads_preferences_docs_and_defaults(tmp_path):
    base = {"question": "What is a black hole?", "answer_a": f"A {LONG}", "answer_b": f"B {LONG}"}
    recs = [
        {**base, "overall_preference": -1, "doc_a": [{"text": "doc one"}, {"content": "doc two"}], "doc_b": "plain"},
        {**base, "overall_preference": 1, "expert": True, "domain": "physics", "source": "custom"},
        {**base, "overall_preference": 0},
    ]
    res = read_lfqa_eval(_write_jsonl(tmp_path / "eval.jsonl", recs))
    assert [p.label for p in res.pairs] == ["a", "b", "tie"]
    assert res.pairs[0].docs_a == ("doc one", "doc two") and res.pairs[0].docs_b == ("plain",)
    assert [p.source for p in res.pairs] == ["lfqa_eval", "custom", "lfqa_eval"]
    assert [p.expert for p in res.pairs] == [None, True, None]
    assert [p.domain for p in res.pairs] == ["", "physics", ""]
    _check_accounting(res)


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet"])
def test_read_table_with_mapping_and_default_labels(tmp_path, ext):
    labels = ["A", "answer_2", "Draw", "1", "b", "TIE"]
    recs = [{"q": f"Question {i}?", "x": f"x{i} {LONG}", "y": f"y{i} {LONG}", "win": w, "uid": f"u{i}"}
            for i, w in enumerate(labels)]
    path = tmp_path / f"t.{ext}"
    if ext == "jsonl":
        _write_jsonl(path, recs)
    elif ext == "parquet":
        _write_parquet(path, recs)
    else:
        import csv

        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(recs[0]))
            w.writeheader()
            w.writerows(recs)
    res = read_table(path, "question=q, answer_a=x, answer_b=y, label=win, pair_id=uid")
    assert [p.label for p in res.pairs] == ["a", "b", "tie", "a", "b", "tie"]
    assert [p.pair_id for p in res.pairs] == [f"u{i}" for i in range(6)]
    assert res.pairs[0].source == "t"  # no source column: the file stem
    _check_accounting(res)


def test_read_table_custom_label_values_and_numeric_labels(tmp_path):
    recs = [{"q": "Q?", "x": LONG, "y": LONG + "!", "pref": v} for v in (-1, 1, 0, 5)]
    res = read_table(_write_jsonl(tmp_path / "t.jsonl", recs),
                     {"question": "q", "answer_a": "x", "answer_b": "y", "label": "pref"},
                     label_values={"-1": "a", "1": "b", "0": "tie"})
    assert [p.label for p in res.pairs] == ["a", "b", "tie"]
    (rej,) = res.rejects
    assert rej.row == 3 and rej.field == "pref"
    assert "row 3" in rej.reason and "'label' (column 'pref')" in rej.reason and "5" in rej.reason
    _check_accounting(res)


@pytest.mark.parametrize("text, err", [
    ("question=q,answer_b=y,label=l", "missing required field(s) 'answer_a'; required: question, answer_a, "
                                      "answer_b (label is optional)"),
    ("question=q,answer_a=x,answer_b=y,label=l,colour=c", "unknown mapping field(s) 'colour'"),
    ("question=q,answer_a", "must look like field=column"),
    ("question=q,question=r,answer_a=x,answer_b=y,label=l", "given twice"),
])
def test_parse_mapping_errors(text, err):
    with pytest.raises(ConfigError, match=err.replace("(", r"\(").replace(")", r"\)")):
        parse_mapping(text)


def test_parse_mapping_ok():
    assert parse_mapping(" question = q ,answer_a=x,answer_b=y,label=l,") == {
        "question": "q", "answer_a": "x", "answer_b": "y", "label": "l"}


def test_read_input_dispatch(tmp_path):
    path = _write_jsonl(tmp_path / "hp.jsonl", [_hp(0)])
    assert set(FORMATS) == {"lfqa-hp", "lfqa-eval", "graded", "jsonl", "parquet", "csv", "hf"}
    assert len(read_input(path, "lfqa-hp").pairs) == 1
    res = read_input(path, "jsonl", mapping="question=question_text,answer_a=answer_1,answer_b=answer_2,"
                                            "label=human_judgment")
    assert res.pairs[0].label == "a"
    with pytest.raises(ConfigError, match="unknown input format 'xml'.*lfqa-hp.*graded.*csv"):
        read_input(path, "xml")
    with pytest.raises(ConfigError, match="unknown option.*'colour'"):
        read_input(path, "lfqa-hp", colour="red")
    with pytest.raises(ConfigError, match="needs a column mapping"):
        read_input(path, "csv")


# ----------------------------------------------------------------------------- graded lists


def _graded_file(tmp_path):
    data = {
        "what is wifi": [
            {"docid": "1", "passage": "Wi-Fi is a wireless networking standard.", "label": 3},
            {"docid": "2", "passage": "Bluetooth is short range.", "label": 1},
            {"docid": "3", "passage": "Routers are boxes.", "label": 0},
            {"docid": "4", "passage": "   ", "label": 2},       # empty: rejected
            {"docid": "5", "passage": "Bad grade.", "label": "high"},  # not an integer: rejected
            {"docid": "6", "passage": "Also grade one.", "label": 1},
        ],
        "how to cook pork": {
            "doc_list": [
                {"answer": "Sear, then roast at 425F to 145F inside.", "model": "m1", "label": 3},
                {"answer": "Cook it until done.", "model": "m2", "label": 1},
                {"answer": 42, "model": "m3", "label": 2},  # wrong type: rejected
            ],
            "ground0": "Boil it.", "ground1": "Bake it.", "ground2": "Roast it.", "ground3": "Sear and roast it.",
        },
    }
    path = tmp_path / "tiny-graded.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_graded_pairs_labels_ids_and_rejects(tmp_path):
    path = _graded_file(tmp_path)
    res = read_graded(path)
    # wifi: valid grades 3,1,0,1 -> pairs with different grades: (0,1)(0,2)(0,5)(1,2)(2,5) = 5; pork: 1 pair
    assert len(res.pairs) == 6
    assert res.rows_in == 9 and len(res.rejects) == 3 and res.rows_ok == 6
    assert res.rows_in == res.rows_ok + len(res.rejects)
    grade = {"Wi-Fi is a wireless networking standard.": 3, "Bluetooth is short range.": 1, "Routers are boxes.": 0,
             "Also grade one.": 1, "Sear, then roast at 425F to 145F inside.": 3, "Cook it until done.": 1}
    for p in res.pairs:
        better = "a" if grade[p.answer_a] > grade[p.answer_b] else "b"
        assert p.label == better
        assert p.source == "tiny-graded" and p.domain == ""
        qid, i, j = p.pair_id.split(":")
        assert qid == p.question_id and int(i) < int(j)
    assert {p.label for p in res.pairs} == {"a", "b"}  # the a/b order is randomised
    assert len({p.pair_id for p in res.pairs}) == len(res.pairs)
    reasons = {r.extra["answer"]: r for r in res.rejects}
    assert set(reasons) == {"3", "4", "2"}
    assert "question 0" in reasons["3"].reason and "answer 3" in reasons["3"].reason
    assert "'passage' is empty" in reasons["3"].reason
    assert reasons["4"].field == "label" and "'high'" in reasons["4"].reason
    assert reasons["2"].field == "answer" and "must be a string, got int" in reasons["2"].reason
    assert reasons["2"].row == 1 and "question 1" in reasons["2"].reason


def test_graded_is_deterministic_capped_and_includes_references(tmp_path):
    path = _graded_file(tmp_path)
    assert read_graded(path, seed=3).pairs == read_graded(path, seed=3).pairs
    capped = read_graded(path, max_pairs_per_question=2)
    assert Counter(p.row for p in capped.pairs) == {0: 2, 1: 1}
    with_refs = read_graded(path, include_references=True)
    pork = [p for p in with_refs.pairs if p.row == 1]
    # answers of grades 3,1 plus references 0,1,2,3 -> 15 pairs minus the 2 same-grade ones (1-1, 3-3)
    assert len(pork) == 13
    assert any("ground3" in p.pair_id for p in pork)
    assert with_refs.rows_in == 13 and with_refs.rows_in == with_refs.rows_ok + len(with_refs.rejects)


def test_graded_carries_each_answers_model_as_its_type(tmp_path):
    from rubric.protocols.lfqa_e import pair_type

    path = _graded_file(tmp_path)
    model = {"Sear, then roast at 425F to 145F inside.": "m1", "Cook it until done.": "m2"}
    res = read_graded(path, include_references=True)
    for p in res.pairs:
        # WebGLM answers: their "model" (after the a/b draw); references and TREC passages: unknown
        assert (p.answer_type_a, p.answer_type_b) == (model.get(p.answer_a, ""), model.get(p.answer_b, ""))
    pork = next(p for p in res.pairs if p.row == 1 and "ground" not in p.pair_id)
    assert {pork.answer_type_a, pork.answer_type_b} == {"m1", "m2"}
    assert pair_type(pork.answer_type_a, pork.answer_type_b) == "model-model"
    assert all(pair_type(p.answer_type_a, p.answer_type_b) is None for p in res.pairs if p.row == 0)
    # an unusable model field leaves the author unknown; the answer is still paired
    data = {"q?": {"doc_list": [{"answer": "One.", "model": ["x"], "label": 1},
                                {"answer": "Two.", "model": " gpt ", "label": 2}]}}
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(data), encoding="utf-8")
    (p,) = read_graded(odd).pairs
    assert sorted([p.answer_type_a, p.answer_type_b]) == ["", "gpt"]


def test_graded_real_webglm_file_carries_the_models():
    path = SHARED_DATA / "WEBGLM_50.json"
    if not path.exists():
        pytest.skip(f"{path} not available")
    res = read_graded(path)
    assert {p.answer_type_a for p in res.pairs} | {p.answer_type_b for p in res.pairs} == {"gpt", "llama", "mistral"}


@pytest.mark.parametrize("content, err", [
    ("[1, 2]", "not a graded answer list"),
    ('{"q": "just a string"}', "not a graded answer list"),
    ('{"q": [', "not valid JSON"),
])
def test_graded_wrong_shape_is_input_error(tmp_path, content, err):
    path = tmp_path / "g.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=err) as exc:
        read_graded(path)
    assert "g.json" in str(exc.value)


def test_graded_real_trec_file():
    path = SHARED_DATA / "TREC-DL-NF.json"
    if not path.exists():
        pytest.skip(f"{path} not available")
    res = read_graded(path, max_pairs_per_question=20)
    # the file is clean: answers are only left out of pairs (by the cap, or a single-grade question)
    assert {r.field for r in res.rejects} == {"pairing"}
    assert res.rows_in == res.rows_ok + len(res.rejects) and res.rows_ok > 1000
    assert max(Counter(p.row for p in res.pairs).values()) <= 20
    assert all(p.source == "TREC-DL-NF" for p in res.pairs)
    share_a = sum(p.label == "a" for p in res.pairs) / len(res.pairs)
    assert 0.35 < share_a < 0.65


# ----------------------------------------------------------------------------- bad input


BAD_ROWS = [
    # (record overrides, field, words the reason must contain)
    ({"answer_2": ""}, "answer_2", ["is empty"]),
    ({"answer_1": " \n\t "}, "answer_1", ["is empty"]),
    ({"answer_2": "x" * 200_000}, "answer_2", ["200,000", "50,000", "--max-answer-chars"]),
    ({"answer_1": 17}, "answer_1", ["must be a string, got int"]),
    ({"answer_2": ["a", "list"]}, "answer_2", ["must be a string, got list"]),
    ({"question_text": None}, "question_text", ["is null; expected a string"]),
    ({"human_judgment": "answer_3"}, "human_judgment", ["'answer_3'"]),
    ({"human_judgment": ""}, "human_judgment", ["has value ''", "or null for no judgement"]),
    ({"human_judgment": 1}, "human_judgment", ["has value 1"]),
    ({"human_expert": "perhaps"}, "human_expert", ["must be a boolean"]),
]


@pytest.mark.parametrize("override, field, words", BAD_ROWS)
def test_bad_rows_become_named_rejects(tmp_path, override, field, words):
    recs = [_hp(0), _hp(1, **override), _hp(2)]
    res = read_lfqa_hp(_write_jsonl(tmp_path / "hp.jsonl", recs))
    assert [p.pair_id for p in res.pairs] == ["p0", "p2"]
    (rej,) = res.rejects
    assert (rej.row, rej.field, rej.pair_id) == (1, field, "p1")
    assert rej.reason.startswith("row 1: ") and repr(field) in rej.reason
    for w in words:
        assert w in rej.reason
    _check_accounting(res)


def test_missing_key_and_max_answer_chars_option(tmp_path):
    rec = _hp(1)
    del rec["answer_1"]
    path = _write_jsonl(tmp_path / "hp.jsonl", [_hp(0, answer_2="y" * 300), rec])
    res = read_lfqa_hp(path, max_answer_chars=200)
    assert [r.reason for r in res.rejects] == [
        "row 0: field 'answer_2' is 300 characters long, over the limit of 200 "
        "(raise it with --max-answer-chars / max_answer_chars)",
        "row 1: missing field 'answer_1'",
    ]
    _check_accounting(res)
    with pytest.raises(ConfigError, match="'max_answer_chars' must be an integer >= 1, got 0"):
        read_lfqa_hp(path, max_answer_chars=0)


def test_lfqa_eval_out_of_range_preference(tmp_path):
    base = {"question": "Q?", "answer_a": LONG, "answer_b": LONG + "."}
    res = read_lfqa_eval(_write_jsonl(tmp_path / "e.jsonl", [
        {**base, "overall_preference": 2}, {**base, "overall_preference": True}, {**base, "overall_preference": -1}]))
    assert len(res.pairs) == 1
    assert [r.field for r in res.rejects] == ["overall_preference"] * 2
    assert "row 0" in res.rejects[0].reason and "expected -1, 0 or 1" in res.rejects[0].reason
    _check_accounting(res)


def test_duplicate_pair_id_names_first_row(tmp_path):
    res = read_lfqa_hp(_write_jsonl(tmp_path / "hp.jsonl", [_hp(0), _hp(1), _hp(2, id="p0")]))
    assert [p.pair_id for p in res.pairs] == ["p0", "p1"]
    (rej,) = res.rejects
    assert rej.row == 2 and rej.field == "pair_id"
    assert rej.reason == "row 2: duplicate pair_id 'p0' (first seen at row 0)"
    _check_accounting(res)


def test_non_utf8_bytes_reject_the_row_naming_the_field(tmp_path):
    lines = [json.dumps(_hp(i)).encode() for i in range(3)]
    lines[1] = lines[1].replace(b"second", b"sec\xff\xfeond", 1)
    path = tmp_path / "hp.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    res = read_lfqa_hp(path)
    assert [p.pair_id for p in res.pairs] == ["p0", "p2"]
    (rej,) = res.rejects
    assert rej.row == 1 and rej.field == "answer_2"
    assert rej.reason == "row 1: field 'answer_2' contains bytes that are not valid UTF-8"
    _check_accounting(res)


def test_broken_jsonl_line_is_a_reject(tmp_path):
    path = tmp_path / "hp.jsonl"
    path.write_text(json.dumps(_hp(0)) + "\n\n" + '{"question_text": "oops", \n' + "[1, 2]\n"
                    + json.dumps(_hp(3)) + "\n", encoding="utf-8")
    res = read_lfqa_hp(path)
    assert [p.pair_id for p in res.pairs] == ["p0", "p3"]
    assert res.rows_in == 4  # the blank line is not a row
    assert [r.row for r in res.rejects] == [1, 2]
    assert res.rejects[0].reason.startswith("row 1: line 3 is not valid JSON")
    assert "expected an object" in res.rejects[1].reason
    _check_accounting(res)


def test_truncated_parquet_is_input_error(tmp_path):
    good = _write_parquet(tmp_path / "good.parquet", [_hp(i) for i in range(50)])
    cut = tmp_path / "cut.parquet"
    data = good.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cannot read Parquet file .*cut\.parquet.*truncated or corrupt"):
        read_lfqa_hp(cut)


@pytest.mark.parametrize("setup, err", [
    (lambda d: d / "nope.jsonl", "input file not found: .*nope.jsonl"),
    (lambda d: d, "is a directory"),
    (lambda d: (d / "bad.json").write_text("[{\"a\": 1},", encoding="utf-8") and d / "bad.json",
     "bad.json.* is not valid JSON"),
    (lambda d: (d / "obj.json").write_text('{"a": 1, "b": 2}', encoding="utf-8") and d / "obj.json",
     "must hold a JSON list"),
])
def test_file_level_failures_raise_input_error(tmp_path, setup, err):
    with pytest.raises(InputError, match=err):
        read_lfqa_hp(setup(tmp_path))
    assert issubclass(InputError, ValueError)


def test_read_table_unknown_extension(tmp_path):
    path = tmp_path / "t.xlsx"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_table(path, "question=q,answer_a=x,answer_b=y,label=l")


# ----------------------------------------------------------------------------- bundled sample


def test_bundled_sample_reads_with_planted_rejects():
    sample = resources.files("rubric") / "data" / "sample_pairs.jsonl"
    with resources.as_file(sample) as path:
        res = read_lfqa_hp(path)
    assert len(res.pairs) == 30 and res.rows_in == 33
    assert sorted(r.field for r in res.rejects) == ["answer_2", "human_judgment", "question_text"]
    _check_accounting(res)
    assert len({p.question_id for p in res.pairs}) == 12
    assert len(explode(res.pairs)) < 2 * len(res.pairs)  # answers are reused across pairs
    labels = Counter(p.label for p in res.pairs)
    assert labels["tie"] >= 2 and labels["a"] > 0 and labels["b"] > 0
    # The sample says what it is: written by this project, not human preference data from a real source.
    assert {p.source for p in res.pairs} == {"lfqa-rubric-sample"} and {p.expert for p in res.pairs} == {None}
    assert len({p.domain for p in res.pairs}) >= 3
    for p in res.pairs:
        for ans in (p.answer_a, p.answer_b):
            assert 40 <= len(ans.split()) <= 250


def test_graded_non_utf8_and_too_long_answers_are_rejects(tmp_path):
    data = {"q": [{"passage": "good answer", "label": 2}, {"passage": "BADBYTES", "label": 1},
                  {"passage": "z" * 300, "label": 0}, {"passage": "fine answer", "label": 0}]}
    path = tmp_path / "g.json"
    path.write_bytes(json.dumps(data).encode().replace(b"BADBYTES", b"bad \xc3\x28 bytes"))
    res = read_graded(path, max_answer_chars=100)
    assert [(r.extra["answer"], r.field) for r in res.rejects] == [("1", "passage"), ("2", "passage")]
    assert "not valid UTF-8" in res.rejects[0].reason and "300 characters" in res.rejects[1].reason
    assert len(res.pairs) == 1 and res.rows_in == 4 == res.rows_ok + len(res.rejects)


def test_csv_with_a_200k_answer_is_a_reject_not_a_crash(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("q,x,y,l\nQ?,short answer,other answer,a\nQ2?," + "w" * 200_000 + ",other,b\n",
                    encoding="utf-8")
    res = read_table(path, "question=q,answer_a=x,answer_b=y,label=l")
    assert len(res.pairs) == 1
    (rej,) = res.rejects
    assert rej.row == 1 and rej.field == "x" and "'answer_a' (column 'x')" in rej.reason
    assert "200,000" in rej.reason
    _check_accounting(res)


def test_read_graded_labels_keys_answers_by_content_id(tmp_path):
    from rubric.io import read_graded_labels
    from rubric.io.records import content_id, question_id

    f = tmp_path / "g.json"
    f.write_text(json.dumps({"Why?": [{"passage": "good one", "label": 3}, {"passage": " ", "label": 1},
                                      {"passage": "weak one", "label": 0}]}))
    labels = read_graded_labels(f)
    assert labels == {content_id("Why?", "good one"): (question_id("Why?"), 3),
                      content_id("Why?", "weak one"): (question_id("Why?"), 0)}  # the empty answer is skipped


# ----------------------------------------------------------------------------- unlabeled pairs, aspects


def test_parse_mapping_without_label_is_accepted():
    assert parse_mapping("question=q,answer_a=x,answer_b=y") == {"question": "q", "answer_a": "x", "answer_b": "y"}


def test_lfqa_hp_absent_or_null_judgement_is_an_unlabeled_pair(tmp_path):
    absent = _hp(2)
    del absent["human_judgment"]
    res = read_lfqa_hp(_write_jsonl(tmp_path / "hp.jsonl", [_hp(0), _hp(1, human_judgment=None), absent]))
    assert [(p.pair_id, p.label) for p in res.pairs] == [("p0", "a"), ("p1", None), ("p2", None)]
    assert res.rejects == [] and res.n_unlabeled == 2
    _check_accounting(res)


def test_lfqa_eval_reads_aspects_and_answer_types(tmp_path):
    base = {"question": "What is a black hole?", "answer_a": f"A {LONG}", "answer_b": f"B {LONG}"}
    recs = [
        {**base, "overall_preference": 1, "coherence_preference": -1, "factuality_preference": 0,
         "answer_a_type": "human", "answer_b_type": "gpt3"},
        # an aspect this project has never seen is read the same way; a null aspect is left out
        {**base, "overall_preference": -1, "factuality_preference": None, "style_preference": 1.0},
        {**base, "coherence_preference": 1},  # no overall judgement: unlabeled, aspect kept
    ]
    res = read_lfqa_eval(_write_jsonl(tmp_path / "eval.jsonl", recs))
    assert [p.label for p in res.pairs] == ["b", "a", None]
    assert [p.aspects for p in res.pairs] == [
        (("coherence", "a"), ("factuality", "tie")), (("style", "b"),), (("coherence", "b"),)]
    assert [(p.answer_type_a, p.answer_type_b) for p in res.pairs] == [("human", "gpt3"), ("", ""), ("", "")]
    _check_accounting(res)


@pytest.mark.parametrize("value", [2, "yes", True, [1], -1.5])
def test_lfqa_eval_invalid_aspect_rejects_the_row_naming_the_field(tmp_path, value):
    base = {"question": "Q?", "answer_a": LONG, "answer_b": LONG + ".", "overall_preference": 0}
    res = read_lfqa_eval(_write_jsonl(tmp_path / "e.jsonl", [
        {**base, "factuality_preference": 1}, {**base, "factuality_preference": value}]))
    assert [p.row for p in res.pairs] == [0]
    (rej,) = res.rejects
    assert (rej.row, rej.field) == (1, "factuality_preference")
    assert f"field 'factuality_preference' has value {value!r}; expected -1, 0 or 1" in rej.reason
    _check_accounting(res)


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet"])
def test_read_table_empty_label_cell_is_unlabeled_and_bad_label_is_a_reject(tmp_path, ext):
    recs = [{"q": f"Question {i}?", "x": f"x{i} {LONG}", "y": f"y{i} {LONG}", "win": w}
            for i, w in enumerate(["a", "", "b", "maybe", "  "])]
    if ext == "parquet":
        recs[4]["win"] = None
        path = _write_parquet(tmp_path / "t.parquet", recs)
    elif ext == "csv":
        import csv

        path = tmp_path / "t.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(recs[0]))
            w.writeheader()
            w.writerows(recs)
    else:
        recs[4]["win"] = None
        path = _write_jsonl(tmp_path / "t.jsonl", recs)
    res = read_table(path, "question=q,answer_a=x,answer_b=y,label=win")
    assert [(p.row, p.label) for p in res.pairs] == [(0, "a"), (1, None), (2, "b"), (4, None)]
    (rej,) = res.rejects
    assert rej.row == 3 and "has value 'maybe'" in rej.reason
    assert res.n_unlabeled == 2
    _check_accounting(res)


def test_read_table_without_a_label_column_reads_every_pair_unlabeled(tmp_path):
    recs = [{"q": f"Question {i}?", "x": f"x{i} {LONG}", "y": f"y{i} {LONG}", "win": "a"} for i in range(3)]
    res = read_input(_write_jsonl(tmp_path / "t.jsonl", recs), "jsonl", mapping="question=q,answer_a=x,answer_b=y")
    assert [p.label for p in res.pairs] == [None, None, None] and res.n_unlabeled == 3
    _check_accounting(res)
    with pytest.raises(ConfigError, match="needs a label column"):
        read_table(tmp_path / "t.jsonl", "question=q,answer_a=x,answer_b=y", label_values={"a": "a"})


def test_a_reference_equal_to_a_compared_answer_rejects_that_pair_alone(tmp_path):
    """A reference that is one of the compared answers would be read against itself by every reference-reading
    rubric: the scoring path (``rubric.io.without_self_references``) rejects that pair alone, naming its row, the
    field and the side, comparing after case, spaces and punctuation (issue 59: the whole file was refused, and a
    lower-cased copy of the answer passed); the readers themselves keep every row (a judge protocol may pair an
    answer with its reference on purpose: RAG-QA Arena)."""
    from rubric.io import normalised_text, without_self_references

    path = tmp_path / "self_ref.jsonl"
    shout = f"FIRST {LONG}".upper().replace(".", "")  # the answer upper-cased and stripped of its full stops
    rows = [_hp(0, reference="An unrelated reference answer."), _hp(1, reference=f"  first {LONG}  "),
            _hp(2, reference=f"second\n{LONG}"), _hp(3, reference=shout), _hp(4)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    got = read_lfqa_hp(path)
    assert [p.pair_id for p in got.pairs] == ["p0", "p1", "p2", "p3", "p4"] and not got.rejects
    assert normalised_text(shout) == normalised_text(f"first {LONG}") != normalised_text(f"second {LONG}")
    kept = without_self_references(got)
    assert [p.pair_id for p in kept.pairs] == ["p0", "p4"]
    assert (kept.rows_in, kept.rows_ok, len(kept.rejects)) == (5, 2, 3)
    assert [(r.row, r.pair_id, r.field) for r in kept.rejects] == [(1, "p1", "reference"), (2, "p2", "reference"),
                                                                   (3, "p3", "reference")]
    assert "row 2: its reference is its answer_b" in kept.rejects[1].reason
    assert "case, spaces and punctuation" in kept.rejects[0].reason and "\n" not in kept.rejects[0].reason
    assert without_self_references(kept) is kept  # nothing left to reject: the read as it was
    assert len(explode(kept.pairs)) == 4
    with pytest.raises(InputError, match="reference answer equal to one of their answers"):
        explode(got.pairs)  # the scoring path never hands explode such a pair; if one did, it would not be scored
    with pytest.raises(ConfigError, match="also answer_b's column"):
        parse_mapping("question=q,answer_a=x,answer_b=y,reference=y")


def test_a_graded_answer_equal_to_its_questions_reference_is_rejected_alone(tmp_path):
    """WebGLM's best groundK is every pair's reference: a generated answer that is that text (up to case, spaces and
    punctuation) is rejected as an answer, and the question's other answers are still paired."""
    ref = "Reference answer, the best one: it explains the thing well."
    data = {"What is the thing?": {"doc_list": [
        {"answer": "reference answer the best one  it explains the THING well", "model": "gpt", "label": 1},
        {"answer": "A good answer that explains the thing.", "model": "gpt", "label": 1},
        {"answer": "A weak answer.", "model": "llama", "label": 0}], "ground0": "x", "ground3": ref}}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    got = read_graded(path)
    assert len(got.pairs) == 1 and got.pairs[0].reference == ref
    assert {got.pairs[0].answer_a, got.pairs[0].answer_b} == {"A good answer that explains the thing.",
                                                              "A weak answer."}
    (r,) = got.rejects
    assert r.field == "reference" and r.extra["answer"] == "0" and "the question's reference answer" in r.reason
    assert (got.rows_in, got.rows_ok) == (3, 2)
