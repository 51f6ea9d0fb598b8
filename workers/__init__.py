"""The jobs and the entry points: no scoring logic of their own (that is in ``rubric/`` and ``models/``).

- :mod:`workers.runner`: the one job line (plan units once -> resume -> step -> merged stores ->
  the kind's assemble -> files published with the manifest) and :func:`~workers.runner.local_step`,
  the in-process step.
- Job kinds, each a small :class:`~workers.runner.JobKind`: :mod:`workers.job` (score answers: it binds
  ``rubric.io.answer_work``, ``models.scorer_set.ScorerSet`` and ``rubric.tables.write_answer_tables``),
  :mod:`workers.judge_job` (judge pairs),
  :mod:`workers.linkage_job` (LINKAGE lists).
- :mod:`workers.protocols`: the protocols of ``judge --protocol``, one declaration each (options, job,
  report page, HTML section), which the CLI and the HTML report loop over.
- :mod:`workers.ray_pipeline` (:class:`~workers.ray_pipeline.RayStep`, the Ray step of every kind),
  :mod:`workers.actors` (``StageActor``, the one actor), :mod:`workers.collect` (rows into stores).
- :mod:`workers.shards`, :mod:`workers.store`, :mod:`workers.outdir`: inputs, score stores, the output folder.
- :mod:`workers.cli` (the ``lfqa-rubric`` command; ``scripts/run_job.py`` is its Ray entry point), with
  :mod:`workers.presets` (``--preset``) and :mod:`workers.logs` (quiet engines), and the single-purpose
  jobs behind commands: ``encoder_job``, ``perturb_job``, ``lfq_job``, ``export``, ``report_cmd``;
  :mod:`workers.serve` (``lfqa-rubric serve``: Ray Serve deployments over the same scorers).
"""
