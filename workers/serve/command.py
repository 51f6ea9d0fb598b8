"""``lfqa-rubric serve``: start (or connect to) Ray, run the service's deployments, wait.

:func:`start_service` is the whole start-up, usable from Python (tests, ``scripts/bench_serve.py``):
check the backends before anything starts (as the batch job does), load the preference model, start
a small local Ray or connect to ``address``, check that every replica of the plan fits on the
cluster's nodes (:func:`workers.serve.placement.check_placement`), start Serve's HTTP proxy on
``host:port`` (loopback unless told otherwise; on the head node only) and deploy one
:class:`~workers.serve.deployments.RubricScorer` per backend plus the ingress
(:func:`application`). It returns once every replica has loaded its models. Whatever fails or is
interrupted on the way (a SIGTERM included, see :func:`serve`) shuts down what it had started.

:func:`build_app` is the same application for ``serve deploy`` (``serve_config.yaml``): its ``argv``
argument holds ``lfqa-rubric serve`` options, read by the same parser.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.preference import ServiceLimits
from rubric.scoring import RubricSpec, resolve_rubrics

__all__ = ["ServeSettings", "Service", "start_service", "application", "build_app", "add_serve", "serve", "SERVE_HELP",
           "TOKEN_ENV", "APP_NAME", "Stopped", "StopSignals"]

log = logging.getLogger(__name__)

#: Environment variable read for the bearer token when ``--token`` is not given.
TOKEN_ENV = "LFQA_RUBRIC_TOKEN"
APP_NAME = "lfqa-rubric"
DEFAULT_RUBRICS = "conciseness,coherence"


@dataclass(frozen=True)
class ServeSettings:
    """Everything a server is started with.

    Attributes:
        specs: the rubrics to serve (default: the model's features, else conciseness and coherence).
        config: the batch job's scoring config (same backends, engine, prompts, batch size).
        limits: request limits.
        model_path: a ``model.json`` written by ``lfqa-rubric fit``; enables ``/v1/prefer``.
        host / port: where Serve's HTTP proxy listens (loopback by default).
        address: a Ray cluster to connect to; None starts a local Ray.
        token: bearer token required on every endpoint but ``/healthz``; None for none.
        replicas: replicas per scorer deployment, and of the ingress (0 CPUs each).
        replica_cpus: Ray CPUs per scorer replica (fractional: Ray on two cores starves otherwise).
        batch_wait_s: longest wait for an engine batch to fill.
        num_cpus: CPUs of a local Ray (None: Ray's default).
    """

    specs: tuple[RubricSpec, ...]
    config: ScoringConfig = field(default_factory=ScoringConfig)
    limits: ServiceLimits = field(default_factory=ServiceLimits)
    model_path: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    address: str | None = None
    token: str | None = None
    replicas: int = 1
    replica_cpus: float = 0.5
    batch_wait_s: float = 0.01
    num_cpus: int | None = None

    def __post_init__(self) -> None:
        if not self.specs:
            raise ConfigError("'specs' must name at least one rubric")
        if self.config.rescale != "declared":
            raise ConfigError("serve rescales by each rubric's declared range; 'rescale' must be 'declared', "
                              f"got {self.config.rescale!r}")
        if not 0 < self.port < 65536:
            raise ConfigError(f"'port' must be in 1..65535, got {self.port}")
        if self.replicas < 1:
            raise ConfigError(f"'replicas' must be >= 1, got {self.replicas}")
        if not self.replica_cpus > 0:
            raise ConfigError(f"'replica_cpus' must be > 0, got {self.replica_cpus}")
        if not 0 <= self.batch_wait_s <= 10:
            raise ConfigError(f"'batch_wait_s' must be in [0, 10], got {self.batch_wait_s}")
        if self.token is not None and not self.token.strip():
            raise ConfigError("'token' must not be empty (leave it out for no token)")


@dataclass
class Service:
    """A running server: its URL, and :meth:`stop` to shut down what :func:`start_service` started."""

    url: str
    started_ray: bool
    temp_dir: str | None
    groups: list[list[str]]

    def stop(self) -> None:
        from ray import serve

        if self.started_ray:
            _shut_down(self.temp_dir)
        else:
            serve.shutdown()


def _groups(specs: Sequence[RubricSpec]) -> dict[str, list[str]]:
    """Backend -> its rubric versions: one scorer deployment per backend, as the batch job builds one scorer."""
    groups: dict[str, list[str]] = {}
    for s in specs:
        groups.setdefault(s.backend, []).append(s.version)
    return groups


def _model(settings: ServeSettings):
    """The preference model the settings name (None without one), checked against the served rubrics."""
    if settings.model_path is None:
        return None
    from rubric.preference import PreferenceModel

    model = PreferenceModel.from_json(settings.model_path)
    missing = [f for f in model.features_ if f not in {s.name for s in settings.specs}]
    if missing:
        raise ConfigError(f"model {settings.model_path} uses rubric(s) {missing} that this server does not "
                          "compute; add them to --rubrics")
    return model


def application(settings: ServeSettings, model=None):
    """The service's Serve application (not yet running): one scorer deployment per backend, the ingress."""
    from workers.store import score_key
    from workers.serve.deployments import RubricScorer, RubricService

    groups = _groups(settings.specs)
    max_ongoing = max(2 * settings.config.batch_size, 8)
    scorers = [RubricScorer.options(name=f"scorer-{backend}", num_replicas=settings.replicas,
                                    max_ongoing_requests=max_ongoing,
                                    ray_actor_options={"num_cpus": settings.replica_cpus})
               .bind(versions, settings.config, settings.batch_wait_s)
               for backend, versions in groups.items()]
    # the score store's key without its input part: every answer this server scores depends on it
    key = score_key(path="", sha256="", fmt="", options={}, specs=settings.specs, config=settings.config)
    del key["input"]
    token_sha = None if settings.token is None else hashlib.sha256(settings.token.strip().encode()).hexdigest()
    # as many ingress replicas as scorer replicas: a lost node must not take the only token check with it
    return RubricService.options(name=INGRESS, num_replicas=settings.replicas).bind(
        list(groups.values()), settings.limits, model, token_sha, key, *scorers)


#: The ingress deployment's name (``serve_config.yaml`` sets its options under it).
INGRESS = "RubricService"


def replica_plan(settings: ServeSettings) -> list:
    """What the settings ask Ray to place: each scorer deployment's replicas and their CPUs (the ingress takes none)."""
    from workers.serve.placement import Replicas

    return [Replicas(f"scorer-{backend}", settings.replicas, {"CPU": settings.replica_cpus})
            for backend in _groups(settings.specs)]


def _check_plan(settings: ServeSettings) -> None:
    """Refuse, in one line, a replica plan that the running Ray's nodes cannot hold."""
    import ray

    from workers.serve.placement import check_placement

    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    hint = ("lower --replicas or --replica-cpus, or give the local Ray more CPUs (--num-cpus)" if settings.address is None
            else "lower --replicas or --replica-cpus, or add nodes to the cluster")
    check_placement(replica_plan(settings), nodes, hint=hint)


class Stopped(Exception):
    """SIGTERM or SIGINT arrived while the service was starting (:func:`serve`)."""


class StopSignals:
    """SIGINT and SIGTERM for a server process (main thread only): during start-up the first one raises
    :class:`Stopped` where the start-up is, so that :func:`start_service` shuts down what it had
    started; after start-up (:meth:`started`) it only sets :attr:`stop`.

    While Ray starts (:meth:`ray_starting`) a signal is only noted, and raised once ``ray.init`` has
    returned: interrupted half-way, ``ray.init`` would leave node processes that only the interpreter's
    exit stops, after the temp folder is removed. ``ray.init`` also installs Ray's own SIGTERM handlers: one
    exits with the signal's number, another kills the local node's processes under the connected
    driver, which then aborts (issue 39: exit 134, agents and the temp folder left behind); they are kept out
    while it runs and ours are installed again after.
    """

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.starting = True
        self._deferred = False
        self._signal = "a signal"

    def _on_signal(self, signum, _frame) -> None:
        first = not self.stop.is_set()
        self.stop.set()
        self._signal = signal.Signals(signum).name
        if self.starting and first and not self._deferred:  # once: a second one must not interrupt the clean-up
            raise Stopped(self._signal)

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    @contextmanager
    def ray_starting(self):
        """Around ``ray.init``: ours stay installed (Ray's are not), a signal is raised when it returns."""
        import ray._private.utils as ray_utils

        setter, ray_utils.set_sigterm_handler = ray_utils.set_sigterm_handler, lambda handler: None
        self._deferred = True
        try:
            yield
        finally:
            ray_utils.set_sigterm_handler = setter
            self._deferred = False
            self.install()  # ray.init may have set SIGINT's too
        if self.stop.is_set():
            raise Stopped(self._signal)

    def started(self) -> None:
        self.starting = False


def start_service(settings: ServeSettings, *, signals: StopSignals | None = None) -> Service:
    """Start the service and return once it answers.

    Args:
        settings: what to serve and how.
        signals: a server process's signal handling: kept through ``ray.init``, told when the start-up
            is over (inside the clean-up's reach, so a signal before that still unwinds it).

    Raises:
        BackendUnavailableError: a backend the rubrics need is missing (before Ray starts).
        InputError: the model file is missing or damaged.
        ConfigError: the model uses a rubric the server does not compute, or the replicas cannot be placed.
    """
    import ray
    from ray import serve

    from models.backends import check_backends

    check_backends(settings.specs, settings.config)
    model = _model(settings)
    started, temp_dir = False, None
    try:
        if not ray.is_initialized():
            started = True
            with signals.ray_starting() if signals is not None else nullcontext():
                if settings.address is None:
                    from workers.ray_pipeline import init_local_ray

                    temp_dir = tempfile.mkdtemp(prefix="lfqa-ray-", dir="/tmp")  # known to the clean-up below
                    init_local_ray(num_cpus=settings.num_cpus, object_store_mb=256, temp_dir=temp_dir)
                else:
                    from workers.logs import ray_logging

                    # remote nodes need lfqa-rubric installed (as for `score --ray --address`)
                    ray.init(address=settings.address, **ray_logging(None))
        _check_plan(settings)
        # the proxy's own end-to-end timeout is a backstop behind the ingress's, which says what happened;
        # one proxy, on the head node: on a cluster of one machine several would share one port
        serve.start(proxy_location="HeadOnly",
                    http_options={"host": settings.host, "port": settings.port,
                                  "request_timeout_s": settings.limits.request_timeout_s + 30})
        serve.run(application(settings, model), name=APP_NAME, route_prefix="/")
        service = Service(url=f"http://{settings.host}:{settings.port}", started_ray=started, temp_dir=temp_dir,
                          groups=list(_groups(settings.specs).values()))
        if signals is not None:
            signals.started()
    except BaseException:
        if started:
            _shut_down(temp_dir)
        raise
    log.info("serving %s on %s (%s)", ", ".join(s.version for s in settings.specs), service.url,
             "token required" if settings.token else "no token")
    return service


def _shut_down(temp_dir: str | None) -> None:
    """Serve, then Ray (the driver disconnects before the local node's processes stop), then the temp folder."""
    import ray
    from ray import serve

    try:
        if ray.is_initialized():
            serve.shutdown()
    finally:
        ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def build_app(args: Mapping[str, Any]):
    """The application for ``serve deploy`` / ``serve run`` (``import_path: workers.serve.command:build_app``).

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
    return application(settings, _model(settings))


# --- the command ---------------------------------------------------------------------------------------------


SERVE_HELP = "rubric vectors and preferences over HTTP (Ray Serve; docs/serve.md)"


def add_serve(s) -> None:
    """The ``serve`` command's options (registered in ``workers.cli.COMMANDS``)."""
    from workers.cli.options import add_scoring_args

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
    from workers.cli import scoring_config

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
