"""Start (or connect to) Ray, run the service's deployments, stop them: ``lfqa-rubric serve``'s service.

:func:`start_service` is the whole start-up, usable from Python (tests, ``scripts/bench_serve.py``):
check the backends before anything starts (as the batch job does), load the preference model, start
a small local Ray or connect to ``address``, check that every replica of the plan fits on the
cluster's nodes (:func:`workers.serve.placement.check_placement`), start Serve's HTTP proxy on
``host:port`` (loopback unless told otherwise; on the head node only) and deploy one
:class:`~workers.serve.deployments.RubricScorer` per backend plus the ingress
(:func:`application`). It returns once every replica has loaded its models. Whatever fails or is
interrupted on the way (a SIGTERM included, see :class:`StopSignals`) shuts down what it had started.

No command-line parsing here: the ``serve`` command and ``serve deploy``'s ``build_app`` read their
options in :mod:`workers.cli.serve`, which imports this package (never the other way round).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import signal
import tempfile
import threading
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from rubric.errors import ConfigError
from rubric.scoring import RubricSpec
from workers.serve.proxy import PROXY_CALLBACK, PROXY_CALLBACK_ENV
from workers.serve.settings import APP_NAME, INGRESS, ServeSettings

__all__ = ["Service", "start_service", "application", "load_model", "replica_plan", "Stopped", "StopSignals"]

log = logging.getLogger(__name__)


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


def load_model(settings: ServeSettings):
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
    from workers.storage.store import score_key
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
    model = load_model(settings)
    started, temp_dir = False, None
    try:
        if not ray.is_initialized():
            started = True
            with signals.ray_starting() if signals is not None else nullcontext():
                if settings.address is None:
                    from workers.cluster import init_local_ray

                    temp_dir = tempfile.mkdtemp(prefix="lfqa-ray-", dir="/tmp")  # known to the clean-up below
                    init_local_ray(num_cpus=settings.num_cpus, object_store_mb=256, temp_dir=temp_dir)
                else:
                    from workers.logs import ray_logging

                    # remote nodes need lfqa-rubric installed (as for `score --ray --address`)
                    ray.init(address=settings.address, **ray_logging(None))
        _check_plan(settings)
        # the proxy's own end-to-end timeout is a backstop behind the ingress's, which says what happened;
        # one proxy, on the head node: on a cluster of one machine several would share one port. The
        # proxy answers a request lost with its ingress replica 503 + Retry-After (workers.serve.proxy):
        # the controller's environment names the middleware, and the proxies it starts inherit it
        serve.start(proxy_location="HeadOnly",
                    http_options={"host": settings.host, "port": settings.port,
                                  "request_timeout_s": settings.limits.request_timeout_s + 30},
                    controller_options={"runtime_env": {"env_vars": {PROXY_CALLBACK_ENV: PROXY_CALLBACK}}})
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

    from workers.cluster import shutdown_ray

    try:
        if ray.is_initialized():
            serve.shutdown()
    finally:
        shutdown_ray()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)
