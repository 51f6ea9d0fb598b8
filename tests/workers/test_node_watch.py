"""The Ray step's node watch (``workers.cluster.pipeline.NodeWatch``) on a cluster's node list as ``ray.nodes()``
gives it, without Ray: what it records and logs when a node leaves, and when the pools no longer fit."""

from __future__ import annotations

import logging

import pytest

from workers.cluster.pipeline import NodeWatch


def _node(node_id: str, cpus: float, alive: bool = True, gpus: float = 0) -> dict:
    res = {"CPU": cpus, "memory": 1e9, f"node:{node_id}": 1.0}
    if gpus:
        res["GPU"] = gpus
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": "10.0.0." + node_id[-1], "Resources": res}


@pytest.fixture
def cluster(monkeypatch):
    nodes = [_node("head0", 0), _node("work1", 2), _node("work2", 2)]
    monkeypatch.setattr(NodeWatch, "_nodes", staticmethod(lambda: [dict(n) for n in nodes]))
    return nodes


def test_a_lost_node_is_recorded_and_logged_with_what_it_takes(cluster, caplog):
    watch = NodeWatch({"CPU": 2.0, "GPU": 0.0})
    watch.poll()
    assert watch.lost == []
    cluster[1] = {**cluster[1], "Alive": False}
    with caplog.at_level(logging.INFO, logger="workers.cluster.pipeline"):
        watch.poll()
        watch.poll()  # reported once
    (lost,) = watch.lost
    assert lost["node_id"] == "work1" and lost["address"] == "10.0.0.1" and lost["resources"] == {"CPU": 2}
    assert caplog.text.count("left the cluster") == 1
    assert "its actors are restarted on other nodes and their batches retried" in caplog.text
    assert "wait for a node to join" not in caplog.text  # 2 CPUs left for 2 CPUs of pools


def test_pools_that_no_longer_fit_are_an_error_that_names_the_numbers(cluster, caplog):
    watch = NodeWatch({"CPU": 3.0})
    del cluster[2]  # gone from the list altogether
    with caplog.at_level(logging.INFO, logger="workers.cluster.pipeline"):
        watch.poll()
    assert [n["node_id"] for n in watch.lost] == ["work2"]
    assert "the pools need 3 CPU but the 2 node(s) left have 2 CPU: the restarted actors wait for a node" in caplog.text


def test_a_node_that_joins_is_logged_not_counted(cluster, caplog):
    watch = NodeWatch({"CPU": 1.0})
    cluster.append(_node("work3", 4))
    with caplog.at_level(logging.INFO, logger="workers.cluster.pipeline"):
        watch.poll()
    assert watch.lost == [] and "node work3 (10.0.0.3) joined the cluster" in caplog.text
