"""``lfqa-rubric serve``: rubric vectors and preferences over HTTP on Ray Serve (docs/serve.md).

The settings (:mod:`workers.serve.settings`) and the start-up (:mod:`workers.serve.service`); the
deployments (:mod:`workers.serve.deployments`) import Ray Serve, this package's face does not, so
``lfqa-rubric --help`` works without the [serve] extra. The command line that starts it is
:mod:`workers.cli.serve`, on top of this package: nothing here imports ``workers.cli``.
"""

from workers.serve.service import Service, Stopped, StopSignals, application, load_model, replica_plan, start_service
from workers.serve.settings import APP_NAME, DEFAULT_RUBRICS, INGRESS, TOKEN_ENV, ServeSettings

__all__ = ["APP_NAME", "DEFAULT_RUBRICS", "INGRESS", "TOKEN_ENV", "ServeSettings", "Service", "Stopped", "StopSignals",
           "application", "load_model", "replica_plan", "start_service"]
