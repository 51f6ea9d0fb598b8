"""The Ray step of every job kind: ``pipeline`` (``RayStep``: read tasks or driver rows, global dedupe,
one actor pool per stage), ``actors`` (``StageActor``, the one actor) and ``collect`` (rows into the
stores as they come back)."""
