"""Deprecated (removed in the next release): the old home of the ``serve`` command and of ``build_app``.

Kept so that a ``serve_config.yaml`` written for an earlier release (``import_path:
workers.serve.command:build_app``) still deploys, and so that the names it held still import. The
command line and ``build_app`` are :mod:`workers.cli.serve` now, the service :mod:`workers.serve`.
Nothing in the project imports this module: it sits on top of both, outside the package's face.
"""

import warnings

from workers.cli.serve import SERVE_HELP, add_serve, build_app, serve, settings_from_args
from workers.serve.service import Service, Stopped, StopSignals, application, replica_plan, start_service
from workers.serve.settings import APP_NAME, DEFAULT_RUBRICS, INGRESS, TOKEN_ENV, ServeSettings

__all__ = ["ServeSettings", "Service", "start_service", "application", "build_app", "add_serve", "serve", "SERVE_HELP",
           "settings_from_args", "replica_plan", "TOKEN_ENV", "APP_NAME", "INGRESS", "DEFAULT_RUBRICS", "Stopped",
           "StopSignals"]

warnings.warn("workers.serve.command is deprecated and goes in the next release: serve_config.yaml's import_path is "
              "workers.cli.serve:build_app, the service's names import from workers.serve",
              DeprecationWarning, stacklevel=2)
