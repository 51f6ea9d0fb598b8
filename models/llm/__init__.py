"""The engines: the engine interface (``engine``), the transformers and vLLM engines (``hf_engine``, ``vllm_engine``;
``vllm_stop``, the logits processor that runs a stop rule inside vLLM), one engine kept busy by several threads
(``engine_loop``), each engine built once per process (``engines_cache``), the G-Eval scorer (``scorer``), the
long-form-question filter (``lfq``) and the embedded CPU judge (``smollm2``).

This is the room's public face: other rooms import from here, not from its modules. Nothing here imports torch or
vLLM: an engine imports them when it is built.
"""

from models.llm.engine import Completer, Engine, TextSampler, check_sampling, take_usage
from models.llm.engines_cache import build_engine, keep_engines_busy, release_engines
from models.llm.lfq import classify_questions
from models.llm.scorer import LLMRubricScorer
from models.llm.smollm2 import converted_folder, gguf_path, smollm2_folder
from models.llm.vllm_engine import VLLMEngine, generate_from_ids, prompt_token_stats

__all__ = ["Engine", "TextSampler", "Completer", "check_sampling", "take_usage", "build_engine", "keep_engines_busy",
           "release_engines", "classify_questions", "LLMRubricScorer", "converted_folder", "gguf_path",
           "smollm2_folder", "VLLMEngine", "generate_from_ids", "prompt_token_stats"]
