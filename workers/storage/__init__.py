"""What a job reads and keeps on disk: ``shards`` (inputs, their sha256, URIs), ``store`` (a unit's raw
scores, keyed by everything that changes a score: ``UnitStore``, the one object a step drives a unit
through), ``index`` (the job's one on-disk index of every unit's scores for a run), ``codec`` (a score and
its provenance as exact JSON text) and ``outdir`` (the output folder every writing command goes through:
lock, staging, publish)."""
