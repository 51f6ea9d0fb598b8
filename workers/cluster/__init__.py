"""The Ray step of every job kind: ``pipeline`` (``RayStep``: read tasks or driver rows, global dedupe,
one actor pool per stage), ``actors`` (``StageActor``, the one actor) and ``collect`` (rows into the
stores as they come back).

This is the room's public face: other rooms import from here, not from its modules. Nothing here imports Ray:
the step does when it runs.
"""

from workers.cluster.actors import StageActor
from workers.cluster.pipeline import PoolConfig, RayStep, add_pool_stage, init_local_ray, item_rows, shutdown_ray

__all__ = ["StageActor", "PoolConfig", "RayStep", "add_pool_stage", "init_local_ray", "item_rows", "shutdown_ray"]
