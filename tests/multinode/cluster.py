"""A Ray cluster of several nodes on this machine: the multi-node tests' harness and scripts/bench_node_loss.py's.

:class:`LocalCluster` starts a head and worker nodes with Ray's own ``ray.cluster_utils.Cluster``
(each node a raylet with its object store and agents, as on separate machines, so a removed node
takes its actors, worker processes and stored blocks with it). Everything it starts binds to
loopback (``node_ip_address`` and the dashboard on 127.0.0.1), lives in one short temp folder
under /tmp, and is found again and stopped by :meth:`LocalCluster.stop`, which also says what it
had to kill. It never touches a Ray it did not start (no ``ray stop``): other Rays on this machine
(a developer's, another test run's) are left alone, no port is Ray's default, and the address file a
plain ``ray.init()`` reads (``/tmp/ray/ray_current_cluster``) is not written.

By default the head has no CPUs (as Ray advises for large clusters: the driver, GCS and Serve's
controller and proxy live there) and every worker node has ``worker_cpus`` CPUs and the custom
resources ``lfqa_worker`` (every worker) and ``lfqa_node_<i>`` (worker ``i`` only), so that
actors land on the worker nodes and a test can remove the node one of them is on.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["LocalCluster", "NodeRemover", "free_port", "write_shards"]

_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: The token the tests' clusters authenticate with (Ray 2.60 starts a local cluster with token authentication):
#: one per test process, given in the environment, which Ray reads before ``~/.ray/auth_token``. That file is one
#: per user: another Ray started on this machine meanwhile (the suite's own, a user's) may replace it, and a job
#: client reading it then fails with InvalidAuthToken.
_AUTH_ENV = "RAY_AUTH_TOKEN"
_TOKEN = secrets.token_hex(16)

#: How fast the head notices a dead node (Ray's production defaults take longer; the tests want seconds).
HEALTH_CHECK = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 1000, "health_check_timeout_ms": 1000,
                "health_check_failure_threshold": 3}


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LocalCluster:
    """Head + ``workers`` worker nodes on this machine (see the module docstring).

    Attributes:
        workers: worker nodes.
        worker_cpus: logical CPUs per worker node (what Ray schedules by, not cores).
        head_cpus: logical CPUs of the head (0: no task or actor runs there unless it asks for 0 CPUs).
        object_store_mb: object store per node (Ray's minimum is ~75 MB).
        dashboard: start the dashboard (the job server of ``ray job submit``) on 127.0.0.1.
    """

    workers: int = 2
    worker_cpus: float = 1
    head_cpus: float = 0
    object_store_mb: int = 100
    dashboard: bool = False
    temp_dir: str = ""
    dashboard_url: str | None = None
    _cluster: Any = None
    _nodes: list = field(default_factory=list)
    _seen: dict[int, str] = field(default_factory=dict)  # pid -> command line of everything seen running
    _env_before: tuple | None = None
    _token_set: bool = False

    # --- start and stop ---------------------------------------------------------------------------------------

    def start(self) -> "LocalCluster":
        import ray._private.utils as ray_utils
        from ray.cluster_utils import Cluster

        self.temp_dir = tempfile.mkdtemp(prefix="lfqa-mn-", dir="/tmp")  # short: Unix socket paths
        # Ray's own exit hooks (registered after this one, so run before it) write into the session folder
        # again when this process exits; the last hook removes it for good
        atexit.register(shutil.rmtree, self.temp_dir, ignore_errors=True)
        # Ray's dashboard process runs even without the UI (the job server); its port is picked here, free,
        # so that it never clashes with another Ray of this machine (8265, Ray's default)
        port = free_port()
        head: dict[str, Any] = {"num_cpus": self.head_cpus, "node_ip_address": "127.0.0.1", "temp_dir": self.temp_dir,
                                "object_store_memory": self.object_store_mb * 2**20, "resources": {"lfqa_head": 1},
                                "include_dashboard": self.dashboard, "dashboard_host": "127.0.0.1",
                                "dashboard_port": port, "_system_config": HEALTH_CHECK}
        self.dashboard_url = f"http://127.0.0.1:{port}" if self.dashboard else None
        # Cluster writes its address to /tmp/ray/ray_current_cluster, which a plain `ray.init()` of any other
        # process on this machine reads: this cluster is the tests' alone, so the file is not written
        write_address, ray_utils.write_ray_address = ray_utils.write_ray_address, lambda *a, **k: None
        self._loopback(True)
        self._own_token(True)
        try:
            self._cluster = Cluster(initialize_head=True, head_node_args=head, shutdown_at_exit=True)
            for i in range(self.workers):
                self._nodes.append(self._cluster.add_node(
                    num_cpus=self.worker_cpus, node_ip_address="127.0.0.1", temp_dir=self.temp_dir,
                    object_store_memory=self.object_store_mb * 2**20,
                    resources={"lfqa_worker": 100, f"lfqa_node_{i}": 100}))
            self._cluster.wait_for_nodes(timeout=60)
        except BaseException:
            self.stop()
            raise
        finally:
            ray_utils.write_ray_address = write_address
        self.watch()
        log.info("cluster up: head + %d worker node(s) at %s, temp dir %s", self.workers, self.address, self.temp_dir)
        return self

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _loopback(self, on: bool) -> None:
        """Make this process and every process of the cluster resolve "this machine" to 127.0.0.1.

        On Linux, ``ray.init(address="127.0.0.1:port")`` replaces a loopback host by the machine's
        address (``ray._private.services.resolve_ip_for_localhost``), where a GCS bound to loopback does
        not answer; with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray keeps loopback, as it does on a laptop.
        The nodes inherit the variable from this process's environment (and hand it to their workers, the
        job drivers of ``ray job submit`` included); this process reads the constant at import, so it is
        set here too. Both are put back by :meth:`stop`.
        """
        from ray._private import ray_constants

        if on:
            self._env_before = (os.environ.get(_LOOPBACK_ENV), ray_constants.ENABLE_RAY_CLUSTER)
            os.environ[_LOOPBACK_ENV] = "0"
            ray_constants.ENABLE_RAY_CLUSTER = False
        elif self._env_before is not None:
            env, const = self._env_before
            if env is None:
                os.environ.pop(_LOOPBACK_ENV, None)
            else:
                os.environ[_LOOPBACK_ENV] = env
            ray_constants.ENABLE_RAY_CLUSTER = const
            self._env_before = None

    def _own_token(self, on: bool) -> None:
        """Give this process and the cluster's (which inherit it) this test process's token (``_TOKEN``), unless
        the environment names one; take it back on stop."""
        if on and _AUTH_ENV not in os.environ:
            os.environ[_AUTH_ENV] = _TOKEN
            self._token_set = True
        elif not on and self._token_set:
            os.environ.pop(_AUTH_ENV, None)
            self._token_set = False

    @property
    def address(self) -> str:
        """The GCS address (``ray.init(address=...)``, ``--address``)."""
        return self._cluster.address

    def stop(self, timeout_s: float = 30.0) -> list[str]:
        """Disconnect this process if it is connected, remove every node, kill what outlived its node, and
        delete the temp folder. Returns the processes that had to be killed (``pid command``), if any."""
        import ray

        from workers.cluster.pipeline import shutdown_ray

        self.watch()
        if ray.is_initialized():
            shutdown_ray()
        if self._cluster is not None:
            import ray._common.utils as common

            # Cluster.shutdown deletes /tmp/ray/ray_current_cluster, which this cluster never wrote: keep another's
            reset, common.reset_ray_address = common.reset_ray_address, lambda *a, **k: None
            try:
                self._cluster.shutdown()
            except Exception as e:  # a node already gone: kill what is left below
                log.warning("cluster shutdown: %s: %s", type(e).__name__, e)
            finally:
                common.reset_ray_address = reset
            self._cluster = None
        self._loopback(False)
        self._own_token(False)
        leftovers = self._kill_leftovers(timeout_s)
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        return leftovers

    # --- nodes ------------------------------------------------------------------------------------------------

    def worker_node_ids(self) -> list[str]:
        """The Ray node ids (hex) of the worker nodes still in the cluster, in start order."""
        return [n.node_id for n in self._nodes]

    def remove_worker(self, index: int, *, graceful: bool = False) -> float:
        """Remove worker node ``index`` (kill its raylet, object store, agents and workers: SIGKILL unless
        ``graceful``, as a preempted machine vanishes). Returns the seconds it took."""
        self.watch()
        node = self._nodes.pop(index)
        t0 = time.perf_counter()
        self._cluster.remove_node(node, allow_graceful=graceful)
        return time.perf_counter() - t0

    # --- processes --------------------------------------------------------------------------------------------

    def _ours(self, proc) -> bool:
        try:
            return self.temp_dir in " ".join(proc.cmdline())
        except Exception:
            return False

    def watch(self) -> None:
        """Remember every process of this cluster running now (their command lines name its temp folder),
        so that :meth:`stop` can find one whose parent died before it."""
        import psutil

        if not self.temp_dir:
            return
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = " ".join(p.info["cmdline"] or ())
            if self.temp_dir in cmd:
                self._seen[p.info["pid"]] = cmd[:200]

    def alive(self) -> list[str]:
        """The processes of this cluster still running (``pid command``)."""
        import psutil

        out = []
        for pid, cmd in list(self._seen.items()):
            try:
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE and self._ours(p):
                    out.append(f"{pid} {cmd}")
            except psutil.Error:
                continue
        for p in psutil.process_iter(["pid"]):
            if p.info["pid"] not in self._seen and self._ours(p):
                out.append(f"{p.info['pid']} {' '.join(p.cmdline())[:200]}")
        return out

    def _kill_leftovers(self, timeout_s: float) -> list[str]:
        import psutil

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.2)  # workers notice their raylet is gone and exit by themselves
        left = self.alive()
        for line in left:
            try:
                psutil.Process(int(line.split()[0])).kill()
            except psutil.Error:
                pass
        if left:
            log.warning("killed %d process(es) that outlived the cluster: %s", len(left), left)
        return left



class NodeRemover(threading.Thread):
    """Removes worker node ``index`` of ``cluster`` mid-job: as soon as the job has appended scored rows to a
    unit's store under ``scores`` (a ``part-*.parquet``), i.e. after some rows are stored, before the end.

    Attributes:
        stored_before: store ids in the stores when the removal began (the test checks it is not all).
        done_before: units finished (``done.json``) when the removal began.
        at_s: seconds from :meth:`start` to the removal; seconds: how long the removal took.
    """

    def __init__(self, cluster: LocalCluster, scores: Path, *, index: int = 0, timeout_s: float = 600) -> None:
        super().__init__(daemon=True)
        self.cluster, self.scores, self.index, self.timeout_s = cluster, scores, index, timeout_s
        self.stored_before: int | None = None
        self.done_before: int | None = None
        self.at_s: float | None = None
        self.seconds: float | None = None
        self.error: BaseException | None = None

    def stored(self) -> int:
        import pyarrow.parquet as pq

        n = 0
        for p in self.scores.glob("*/part-*.parquet"):
            try:
                n += pq.read_metadata(p).num_rows
            except OSError:  # being replaced right now
                continue
        return n

    def run(self) -> None:
        t0 = time.monotonic()
        try:
            while not any(self.scores.glob("*/part-*.parquet")):
                if time.monotonic() - t0 > self.timeout_s:
                    raise TimeoutError(f"nothing was stored within {self.timeout_s} s")
                time.sleep(0.02)
            self.stored_before = self.stored()
            self.done_before = len(list(self.scores.glob("*/done.json")))
            self.at_s = time.monotonic() - t0
            self.seconds = self.cluster.remove_worker(self.index)
        except BaseException as e:  # reported by the caller
            self.error = e


def write_shards(folder: Path, n_shards: int, copies: int = 1) -> list[Path]:
    """``n_shards`` shards of the bundled sample (33 records, 34 answers), each with its own question texts
    (``(set k.c)`` appended), so no answer is shared between shards and every shard is scored in full;
    ``copies`` repeats the sample inside a shard with distinct questions again."""
    sample = resources.files("rubric") / "data" / "sample_pairs.jsonl"
    recs = [json.loads(line) for line in sample.read_text(encoding="utf-8").split("\n") if line.strip()]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(n_shards):
        rows = [{**r, "id": f"s{k}c{c}r{i}",
                 **({"question_text": f"{r['question_text']} (set {k}.{c})"} if "question_text" in r else {})}
                for c in range(copies) for i, r in enumerate(recs)]  # a record without a question stays a reject
        path = folder / f"part{k}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        paths.append(path)
    return paths
