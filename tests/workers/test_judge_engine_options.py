"""``judge`` takes the engine options ``score`` takes (``--llm-batches-in-flight``, ``--llm-actors``,
``--tensor-parallel``, ...) from their one definition (``workers.cli.options.add_ray_args``), and hands them
to its Ray step; the rubric pools' options are ``score``'s alone."""

from __future__ import annotations

import argparse

import pytest

from workers.cli import build_parser, main
from workers.cli.options import RUBRIC_POOL_OPTIONS


def _ray_options(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    group = next(g for g in sub._action_groups if g.title == "Ray")
    return {a.option_strings[0]: a for a in group._group_actions}


def test_judge_has_every_engine_option_of_score_from_one_definition():
    score, judge = _ray_options("score"), _ray_options("judge")
    assert "--llm-batches-in-flight" in judge and "--tensor-parallel" in judge
    assert set(judge) == set(score) - set(RUBRIC_POOL_OPTIONS)
    for name, action in judge.items():  # same defaults and help: the same definition
        assert (action.default, action.help) == (score[name].default, score[name].help), name


def test_judge_hands_the_engine_options_to_its_ray_step(monkeypatch, tmp_path):
    seen = {}

    def fake_run(inputs, fmt, settings, out, *, config, reader_options, seed, progress, ray, force, max_failed):
        seen.update(config=config, ray=ray)

    monkeypatch.setattr("workers.jobs.run_judge_job", fake_run)  # the face the command imports it from
    assert main(["judge", "in.jsonl", "--format", "lfqa-hp", "--out", str(tmp_path / "j"), "--ray",
                 "--llm-batches-in-flight", "3", "--llm-actors", "2", "--tensor-parallel", "2"]) == 0
    llm = seen["ray"].pools["llm"]
    assert (llm.batches_in_flight, llm.size, llm.num_gpus) == (3, 2, 2.0)
    assert set(seen["ray"].pools) == {"llm"}
    assert seen["config"].engine_kwargs["tensor_parallel_size"] == 2  # as score --ray gives its engines
    seen.clear()
    assert main(["judge", "in.jsonl", "--format", "lfqa-hp", "--out", str(tmp_path / "j")]) == 0
    assert seen["ray"] is None and "tensor_parallel_size" not in seen["config"].engine_kwargs


def test_rubric_pool_options_are_not_judge_options(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["judge", "x", "--format", "lfqa-hp", "--out", "o", "--text-actors", "2"])
    assert "unrecognized arguments: --text-actors 2" in capsys.readouterr().err
