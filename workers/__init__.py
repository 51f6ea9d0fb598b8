"""The jobs and the entry points: no scoring logic of their own (that is in ``rubric/`` and ``models/``).

- :mod:`workers.runner`: the one job line (plan units once -> resume -> step -> merged stores ->
  the kind's assemble -> files published with the manifest) and :func:`~workers.runner.local_step`,
  the in-process step.
- :mod:`workers.jobs`: the job kinds, each a small :class:`~workers.runner.JobKind` (``score``,
  ``judge``, ``linkage``), and the single-purpose jobs behind commands (``encoder``, ``perturb``,
  ``lfq``, ``export``).
- :mod:`workers.protocols`: the protocols of ``judge --protocol``, one declaration each (options, job,
  report page, HTML section), which the CLI and the HTML report loop over.
- :mod:`workers.cluster`: the Ray step of every kind (``RayStep``), its one actor and the collector.
- :mod:`workers.storage`: inputs (``shards``), score stores (``store``), the output folder (``outdir``).
- :mod:`workers.cli` (the ``lfqa-rubric`` command, with ``--preset`` and ``report --html``;
  ``scripts/run_job.py`` is its Ray entry point; ``entry`` and ``installed`` check the installation
  first), :mod:`workers.logs` (quiet engines), :mod:`workers.serve` (``lfqa-rubric serve``: Ray Serve
  deployments over the same scorers).
"""
