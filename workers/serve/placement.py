"""Where the service's replicas go, checked before anything is deployed, and when the service is ready.

Pure functions over plain data (no Ray import), so the rules are tested without a cluster:

- :func:`check_placement`: every replica the plan asks for must fit on the nodes' resources
  (first-fit, largest replica first), else one line says what was asked, what the cluster has and
  which option to change. Ray would otherwise leave the replicas pending for ever while the proxy
  answers ``/healthz`` and every request times out.
- :func:`readiness`: the service is ready when its application runs and every deployment has all its
  replicas running, which for a scorer means its engine and models are loaded (a Serve replica is
  RUNNING only once its constructor has returned).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rubric.errors import ConfigError

__all__ = ["Replicas", "check_placement", "readiness", "READY_STATUSES"]

#: Deployment statuses that still serve every request: all replicas running, or scaling between bounds.
READY_STATUSES = frozenset({"HEALTHY", "UPSCALING", "DOWNSCALING"})


@dataclass(frozen=True)
class Replicas:
    """``count`` replicas of deployment ``name``, each holding ``resources`` (``CPU``, ``GPU``, custom names)."""

    name: str
    count: int
    resources: Mapping[str, float] = field(default_factory=dict)


def _fmt(res: Mapping[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in res.items() if v) or "nothing"


def check_placement(plan: Sequence[Replicas], nodes: Sequence[Mapping[str, float]], *, hint: str = "") -> None:
    """Raise if the replicas of ``plan`` cannot all be placed on ``nodes`` (each node's total resources).

    Placement is first-fit with the largest replicas first, as good as Ray's own for replicas of a few
    sizes. Only resources a replica asks for are checked; the nodes' totals are used, so a cluster busy
    with other work can still leave a replica pending (the readiness endpoint then says so).

    Raises:
        ConfigError: one line naming the replicas, what they need in total, what the nodes have, and ``hint``.
    """
    free = [dict(n) for n in nodes]
    wanted = [(r.name, dict(r.resources)) for r in plan for _ in range(r.count)]
    wanted.sort(key=lambda w: tuple(-w[1].get(k, 0.0) for k in ("GPU", "CPU")))
    unplaced: list[str] = []
    for name, res in wanted:
        for node in free:
            if all(node.get(k, 0.0) + 1e-9 >= v for k, v in res.items()):
                for k, v in res.items():
                    node[k] = node.get(k, 0.0) - v
                break
        else:
            unplaced.append(name)
    if not unplaced:
        return
    total: dict[str, float] = {}
    for _, res in wanted:
        for k, v in res.items():
            total[k] = total.get(k, 0.0) + v
    have = {k: sum(n.get(k, 0.0) for n in nodes) for k in total}
    largest = {k: max((n.get(k, 0.0) for n in nodes), default=0.0) for k in total}
    asked = ", ".join(f"{r.name} x {r.count} ({_fmt(r.resources)} each)" for r in plan)
    counts = {n: unplaced.count(n) for n in dict.fromkeys(unplaced)}
    raise ConfigError(f"cannot place the service's replicas on this Ray cluster: {asked} need {_fmt(total)} in all; "
                      f"the cluster's {len(nodes)} node(s) have {_fmt(have)} (largest node: {_fmt(largest)}), so "
                      f"{', '.join(f'{c} of {n}' for n, c in counts.items())} would wait for ever"
                      + (f"; {hint}" if hint else ""))


def readiness(app_status: str | None, deployments: Mapping[str, tuple[str, Mapping[str, int]]]) -> tuple[bool, dict]:
    """Whether the service is ready, and the body that says why (the readiness endpoint's).

    Args:
        app_status: the application's Serve status (``RUNNING``, ``DEPLOYING``, ...); None if it is unknown.
        deployments: per deployment, its Serve status and its replicas by state (``{"RUNNING": 2, "STARTING": 1}``).

    Returns:
        (ready, body): ready when the application is RUNNING and every deployment is HEALTHY (or scaling
        between its autoscaling bounds) with at least one replica RUNNING.
    """
    waiting = {}
    for name, (status, states) in sorted(deployments.items()):
        running = int(states.get("RUNNING", 0))
        if status not in READY_STATUSES or running < 1:
            waiting[name] = {"status": status, "replicas": dict(states)}
    ready = app_status == "RUNNING" and bool(deployments) and not waiting
    body = {"ready": ready, "application": app_status,
            "deployments": {n: {"status": s, "replicas": dict(r)} for n, (s, r) in sorted(deployments.items())}}
    if not ready:
        body["waiting_for"] = sorted(waiting) or ["the application"]
    return ready, body
