"""What a server is started with (:class:`ServeSettings`) and the service's fixed names.

Plain data (no Ray import): :mod:`workers.serve.service` starts a service from these settings, the
deployments (:mod:`workers.serve.deployments`) read the names, and the command line
(:mod:`workers.cli.serve`) builds the settings from its options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError
from rubric.preference import ServiceLimits
from rubric.scoring import RubricSpec

__all__ = ["ServeSettings", "TOKEN_ENV", "APP_NAME", "INGRESS", "DEFAULT_RUBRICS"]

#: Environment variable read for the bearer token when ``--token`` is not given.
TOKEN_ENV = "LFQA_RUBRIC_TOKEN"
#: The Serve application's name when ``lfqa-rubric serve`` starts it (``serve deploy``'s config names its own).
APP_NAME = "lfqa-rubric"
#: The ingress deployment's name (``serve_config.yaml`` sets its options under it).
INGRESS = "RubricService"
#: The rubrics served when neither ``--rubrics`` nor a model names any.
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
        check_range("port", self.port, low=1, high=65535)
        check_range("replicas", self.replicas, low=1)
        check_range("replica_cpus", self.replica_cpus, above=0)
        check_range("batch_wait_s", self.batch_wait_s, low=0, high=10)
        if self.token is not None and not self.token.strip():
            raise ConfigError("'token' must not be empty (leave it out for no token)")
