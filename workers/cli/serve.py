"""``lfqa-rubric serve``'s options and handler, and ``serve deploy``'s :func:`build_app` (the same options).

The service itself (settings, start-up, deployments) is :mod:`workers.serve`, which knows nothing of
the command line; this module sits on top of it and of the shared option groups.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping
from typing import Any

from rubric.errors import ConfigError
from rubric.preference import ServiceLimits
from rubric.scoring import resolve_rubrics
from workers.cli.options import add_scoring_args, scoring_config
from workers.serve import (DEFAULT_RUBRICS, TOKEN_ENV, ServeSettings, Stopped, StopSignals, application, load_model,
                           start_service)

__all__ = ["SERVE_HELP", "add_serve", "settings_from_args", "serve", "build_app"]

log = logging.getLogger(__name__)

SERVE_HELP = "rubric vectors and preferences over HTTP (Ray Serve; docs/serve.md)"


def add_serve(s) -> None:
    """The ``serve`` command's options (registered in ``workers.cli.COMMANDS``)."""
    add_scoring_args(s, None)
    s.add_argument("--model", default=None, help="model JSON from 'lfqa-rubric fit': enables POST /v1/prefer "
                                                 "(default rubrics: the model's)")
    s.add_argument("--host", default="127.0.0.1", help="interface to listen on (loopback unless told otherwise)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--address", default=None, help="a Ray cluster to connect to (default: start a local Ray)")
    s.add_argument("--token", default=None,
                   help=f"bearer token required on every endpoint but /healthz (default: ${TOKEN_ENV}, else none)")
    s.add_argument("--replicas", type=int, default=1, help="replicas per scorer deployment and of the ingress")
    s.add_argument("--replica-cpus", type=float, default=0.5, help="Ray CPUs per scorer replica")
    s.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray (default: all)")
    s.add_argument("--batch-wait-ms", type=float, default=10.0, help="longest wait for an engine batch to fill")
    s.add_argument("--max-items", type=int, default=ServiceLimits.max_items, help="items per request")
    s.add_argument("--max-body-bytes", type=int, default=ServiceLimits.max_body_bytes, help="request body size")
    s.add_argument("--request-timeout", type=float, default=ServiceLimits.request_timeout_s,
                   help="seconds before a request is answered 504")
    s.add_argument("--cache-answers", type=int, default=ServiceLimits.cache_answers,
                   help="scored answers kept for repeated requests (0: no cache)")


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    """The :class:`ServeSettings` a ``serve`` command line names."""
    rubrics = args.rubrics
    if rubrics is None and args.model is not None:
        from rubric.preference import PreferenceModel

        model = PreferenceModel.from_json(args.model)
        rubrics = [model.provenance[f]["rubric_version"] if model.provenance else f for f in model.features_]
    limits = ServiceLimits(max_body_bytes=args.max_body_bytes, max_items=args.max_items,
                           max_answer_chars=args.max_answer_chars, max_question_chars=args.max_question_chars,
                           request_timeout_s=args.request_timeout, cache_answers=args.cache_answers)
    return ServeSettings(specs=tuple(resolve_rubrics(rubrics or DEFAULT_RUBRICS)), config=scoring_config(args),
                         limits=limits, model_path=args.model, host=args.host, port=args.port, address=args.address,
                         token=args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None,
                         replicas=args.replicas, replica_cpus=args.replica_cpus, batch_wait_s=args.batch_wait_ms / 1000,
                         num_cpus=args.num_cpus)


def serve(args: argparse.Namespace) -> int:
    """Start the service, serve until SIGINT or SIGTERM, stop it (:class:`StopSignals`).

    A signal during start-up unwinds it where it is (``ray.init``'s wait, a model loading, ``serve.run``'s
    wait) and :func:`start_service` shuts down what it had started, in order: Serve, Ray (the driver
    disconnects before the local node's processes stop), the temp folder. After start-up a signal ends
    the wait and the service is stopped the same way. Exit status 0 either way.
    """
    settings = settings_from_args(args)
    signals = StopSignals()
    signals.install()
    try:
        service = start_service(settings, signals=signals)
    except Stopped as e:
        log.info("stopped by %s during start-up; what had started is shut down", e)
        return 0
    log.info("listening on %s (POST /v1/score%s; ready: GET /readyz; Ctrl-C stops)", service.url,
             ", /v1/prefer" if args.model else "")
    try:
        while not signals.stop.wait(1.0):
            pass
    finally:
        service.stop()
    return 0


def build_app(args: Mapping[str, Any]):
    """The application for ``serve deploy`` / ``serve run`` (``import_path: workers.cli.serve:build_app``).

    Args:
        args: ``{"argv": [...]}``, the ``lfqa-rubric serve`` options that say what is served and how
            (``--rubrics``, ``--model``, ``--batch-size``, the LLM options, the limits, ``--token``);
            the token defaults to ``$LFQA_RUBRIC_TOKEN`` where the application is built. Options about
            Ray and the proxy (``--host``, ``--port``, ``--address``, ``--num-cpus``) are the config
            file's business and are refused here; replica counts and resources given in the config's
            ``deployments`` win over ``--replicas`` / ``--replica-cpus``.
    """
    argv = list(args.get("argv") or [])
    unknown = set(args) - {"argv"}
    if unknown:
        raise ConfigError(f"serve_config.yaml: unknown application args {sorted(unknown)}; put the 'lfqa-rubric "
                          "serve' options in 'argv'")
    for opt in ("--host", "--port", "--address", "--num-cpus"):
        if any(a == opt or a.startswith(opt + "=") for a in argv):
            raise ConfigError(f"serve_config.yaml: {opt} is set by the config file itself (http_options, the "
                              "cluster), not in the application's argv")
    from models.backends import check_backends

    parser = argparse.ArgumentParser(prog="lfqa-rubric serve (serve_config.yaml argv)")
    add_serve(parser)
    settings = settings_from_args(parser.parse_args(argv))
    check_backends(settings.specs, settings.config)
    return application(settings, load_model(settings))
