"""``lfqa-rubric serve``: rubric vectors and preferences over HTTP on Ray Serve (docs/serve.md).

The deployments (:mod:`workers.serve.deployments`) import Ray Serve; this package's face does not,
so ``lfqa-rubric --help`` works without the [serve] extra.
"""

from workers.serve.command import APP_NAME, TOKEN_ENV, ServeSettings, Service, add_serve, serve, SERVE_HELP, start_service

__all__ = ["APP_NAME", "TOKEN_ENV", "ServeSettings", "Service", "add_serve", "serve", "SERVE_HELP", "start_service"]
