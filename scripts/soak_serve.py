"""A soak of ``lfqa-rubric serve`` on loopback: many distinct answers from a few clients, and the service's memory.

    .venv/bin/python scripts/soak_serve.py --answers 20000 --clients 4 --items 8

Starts the service in this process (local Ray, loopback only, the default answer cache of 10,000 answers) with
``--rubrics`` (default: the ``cpu`` preset's nine versions: spaCy, Harper and MiniLM scorer deployments; MiniLM as
the service encodes by default, fp32, unless ``--minilm-encoder``), then
sends ``--answers`` distinct (question, answer) items of ``--data`` (TREC-DL-NF's passages, WebGLM's answers and
references, RAG-QA Arena's answers: 20,274 distinct, those the service would refuse left out) as requests of
``--items`` from ``--clients`` concurrent clients, each answer once. Every ``--every`` answers it prints a line:
answers, answers/s over the window, the window's p50 and p95 request latency, errors so far (a request not
answered 200, an item refused, a rubric's failure; abstentions are not errors) and the resident memory (VmRSS)
of each process of the service: each Serve replica (by deployment), the Serve controller and proxy, this driver
(which also runs the clients) and the rest of Ray (raylet, GCS, idle workers) together. At the end: a Markdown
table of each process's RSS at the first line, at the middle of the run and at its end, and its rise per answer
over the second half (a least-squares slope over its lines), and whether every request was answered.

Bounded: it stops after ``--max-minutes`` even if not every answer was sent, and says so. Nothing leaves the
machine: the service listens on 127.0.0.1 and the clients call it there.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from math import ceil
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("lfqa_rubric.soak_serve")


def distinct_items(data: Path) -> list[tuple[str, str]]:
    """Distinct (question, answer) pairs of the public data, in file order."""
    seen: dict[tuple[str, str], None] = {}
    for q, answers in json.loads((data / "TREC-DL-NF.json").read_text(encoding="utf-8")).items():
        seen.update(((q, a["passage"]), None) for a in answers)
    for q, entry in json.loads((data / "WEBGLM_50.json").read_text(encoding="utf-8")).items():
        seen.update(((q, d["answer"]), None) for d in entry["doc_list"])
        seen.update(((q, entry[k]), None) for k in entry if k.startswith("ground") and isinstance(entry[k], str))
    for path in sorted(glob.glob(str(data / "rag-qa-arena" / "annotations_*.jsonl"))):
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            seen[(r["question"], r["answer"])] = None
    return list(seen)


def _rss_kb(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(text.split("VmRSS:")[1].split()[0]) if "VmRSS:" in text else None


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def processes() -> dict[str, list[int]]:
    """Label -> pids: each Serve replica by its deployment, the controller, the proxy, this driver, the rest of Ray
    (read from the process titles Ray gives its workers: ``ray::ServeReplica:APP:DEPLOYMENT``, ...)."""
    labels: dict[str, list[int]] = {"driver (and the clients)": [os.getpid()]}
    rest = []
    for pid in sorted(_descendants(os.getpid())):
        title = _title(pid)
        if title.startswith("ray::ServeReplica:"):
            labels.setdefault(title.split()[0].split(":")[-1], []).append(pid)
        elif title.startswith("ray::ServeController"):
            labels.setdefault("serve controller", []).append(pid)
        elif title.startswith("ray::ProxyActor"):
            labels.setdefault("serve proxy", []).append(pid)
        else:
            rest.append(pid)
    labels["rest of Ray (raylet, GCS, idle workers)"] = rest
    return labels


def rss_mb(labels: dict[str, list[int]]) -> dict[str, float]:
    return {k: sum(_rss_kb(p) or 0 for p in pids) / 1024 for k, pids in labels.items()}


def _post(url: str, body: dict, timeout: float) -> tuple[int, dict, float]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, reply = resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        status, reply = e.code, {}
    except OSError as e:
        status, reply = 0, {"detail": str(e)}
    return status, reply, time.perf_counter() - t0


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] if s else float("nan")


def _slope(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rubrics", default=None, help="rubric versions (default: the cpu preset's nine)")
    p.add_argument("--answers", type=int, default=20_000, help="distinct answers to send, each once")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients")
    p.add_argument("--items", type=int, default=8, help="answers per request")
    p.add_argument("--every", type=int, default=1_000, help="a line every this many answers")
    p.add_argument("--replicas", type=int, default=1, help="replicas per scorer deployment")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--minilm-encoder", default=None,
                   help="fp32 or int8 (default: the service's, ScoringConfig's; the cpu preset's batch jobs use int8)")
    p.add_argument("--port", type=int, default=8766)
    p.add_argument("--max-minutes", type=float, default=120.0, help="stop after this long, whatever is left")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from rubric.config import ScoringConfig
    from rubric.io import Reject
    from rubric.preference import ServiceLimits, answer_item
    from rubric.scoring import is_abstention, resolve_rubrics
    from rubric.presets import CPU
    from workers.serve import ServeSettings, replica_plan, start_service

    specs = resolve_rubrics(args.rubrics or ",".join(CPU.rubric_versions.values()))
    limits = ServiceLimits(max_items=args.items, request_timeout_s=600)
    config = ScoringConfig(batch_size=args.batch_size,
                           **({"minilm_encoder": args.minilm_encoder} if args.minilm_encoder else {}))
    pool = distinct_items(Path(args.data))
    usable = [(q, a) for q, a in pool if not isinstance(answer_item({"question": q, "answer": a}, limits), Reject)]
    items = usable[:args.answers]
    print(f"rubrics: {', '.join(s.version for s in specs)} (MiniLM {config.minilm_encoder}); {len(pool):,} distinct "
          f"(question, answer) items in {args.data}, {len(pool) - len(usable):,} the service would refuse, "
          f"{len(items):,} sent, each once; {args.clients} clients x {args.items} answers per request; cache of "
          f"{limits.cache_answers:,} answers; load {os.getloadavg()[0]:.2f} at the start", flush=True)

    settings = ServeSettings(specs=tuple(specs), config=config, port=args.port,
                             replicas=args.replicas, replica_cpus=0.5, num_cpus=2, limits=limits)
    need = sum(r.count * r.resources.get("CPU", 0) for r in replica_plan(settings))
    settings = dataclasses.replace(settings, num_cpus=max(2, ceil(need)))
    t0 = time.perf_counter()
    service = start_service(settings)
    print(f"service up in {time.perf_counter() - t0:.1f} s at {service.url}", flush=True)
    url = service.url + "/v1/score"
    labels = processes()
    requests = [items[k:k + args.items] for k in range(0, len(items), args.items)]
    lock = threading.Lock()
    state = {"answers": 0, "requests": 0, "unanswered": 0, "item_errors": 0, "failed_cells": 0, "latency": [],
             "lines": [], "t_window": time.perf_counter(), "n_window": 0}
    deadline = time.monotonic() + args.max_minutes * 60
    stopped = threading.Event()
    header = ["answers", "answers/s", "p50 s", "p95 s", "errors", *labels, "load"]
    print("| " + " | ".join(header) + " |\n|" + "---:|" * len(header), flush=True)

    def report() -> None:  # under the lock
        now = time.perf_counter()
        lat = state["latency"]
        rss = rss_mb(labels)
        errors = state["unanswered"] + state["item_errors"] + state["failed_cells"]
        rate = (state["answers"] - state["n_window"]) / (now - state["t_window"])
        state["lines"].append((state["answers"], rss))
        print(f"| {state['answers']:,} | {rate:.1f} | {_pct(lat, .5):.2f} | {_pct(lat, .95):.2f} | {errors} | "
              + " | ".join(f"{rss[k]:.0f}" for k in labels) + f" | {os.getloadavg()[0]:.2f} |", flush=True)
        state["latency"], state["t_window"], state["n_window"] = [], now, state["answers"]

    def one(batch: list[tuple[str, str]]) -> None:
        if stopped.is_set() or time.monotonic() > deadline:
            stopped.set()
            return
        status, reply, secs = _post(url, {"items": [{"question": q, "answer": a} for q, a in batch]}, 900)
        with lock:
            state["requests"] += 1
            state["latency"].append(secs)
            if status != 200:
                state["unanswered"] += 1
            else:
                for r in reply["results"]:
                    state["item_errors"] += bool(r.get("error"))
                    state["failed_cells"] += sum(1 for e in (r.get("errors") or {}).values()
                                                 if e is not None and not is_abstention(e))
            before = state["answers"]
            state["answers"] += len(batch)
            if state["answers"] // args.every > before // args.every:
                report()

    t_start = time.perf_counter()
    try:
        with ThreadPoolExecutor(args.clients) as workers:
            list(workers.map(one, requests))
        with lock:
            if state["answers"] % args.every:
                report()
    finally:
        wall = time.perf_counter() - t_start
        moved = processes()
        service.stop()
    lines = state["lines"]
    half = [(n, r) for n, r in lines if n >= lines[-1][0] / 2] if lines else []
    print(f"\n{state['answers']:,} answers in {state['requests']:,} requests, {wall:.0f} s "
          f"({state['answers'] / wall:.1f} answers/s); requests not answered 200: {state['unanswered']}, "
          f"items refused: {state['item_errors']}, rubric failures: {state['failed_cells']}"
          + ("; STOPPED at --max-minutes before every answer was sent" if stopped.is_set() else "")
          + ("" if moved == labels else "; a process of the service was replaced during the run (pids moved)")
          + f"; load {os.getloadavg()[0]:.2f} at the end\n")
    if len(half) >= 2:
        first, mid, last = lines[0], half[0], half[-1]
        print(f"| process | RSS MB at {first[0]:,} | at {mid[0]:,} | at {last[0]:,} | rise over the last "
              f"{last[0] - mid[0]:,} answers, KB per answer (slope) |\n|---|---:|---:|---:|---:|")
        for k in labels:
            slope = _slope([n for n, _ in half], [r[k] * 1024 for _, r in half])
            print(f"| {k} | {first[1][k]:.0f} | {mid[1][k]:.0f} | {last[1][k]:.0f} | {slope:+.2f} |")
    return 0 if not stopped.is_set() and not state["unanswered"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
