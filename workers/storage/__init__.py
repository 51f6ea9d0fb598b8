"""What a job reads and keeps on disk: ``shards`` (inputs, their sha256, URIs), ``store`` (a unit's raw
scores, keyed by everything that changes a score) and ``outdir`` (the output folder every writing
command goes through: lock, staging, publish)."""
