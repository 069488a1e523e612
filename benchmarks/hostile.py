"""Soak of one control plane with generated hostile requests (issue 17's "Done when").

Sends ``--requests`` (default 10,000) cases of ``tests/conformance/hostile_requests.py`` (seeded: malformed
and oversized bodies, deep nesting, YAML alias bombs, wrong and unknown fields, every verb, content type and
patch type, odd names, query parameters, bad paths, HTTP/1.0), each after its setup requests, from
``--workers`` client threads to a fresh cluster of ``clusters/empty.yaml`` on ``--backend embedded`` (the
``mockgpu`` daemon: API server, scheduler and controllers in one process) or ``--backend upstream``
(kube-apiserver v1.37.2 + etcd; its RSS is kube-apiserver's). Meanwhile one thread polls ``/readyz`` every
``--poll`` seconds and records the worst latency. Prints answers by status class, the 5xx and stalled cases,
the worst ``/readyz`` latency, and the server's RSS before (after start and a warm-up of valid requests) and
after (``--settle`` seconds after the last request), against the targets: 0 x 5xx except where upstream
answers 5xx too (``--against`` a run saved with ``--save`` on the other backend), no ``/readyz`` over 1 s,
RSS after <= 1.5 x before.

    python benchmarks/hostile.py --backend embedded [--requests 10000] [--seed 17] [--save emb.json]
    python benchmarks/hostile.py --backend upstream --save up.json
    python benchmarks/hostile.py --backend embedded --against up.json
    python benchmarks/hostile.py --load emb.json --against up.json    # summarise saved runs again
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "conformance")]

from hostile_requests import CM as CONFIGMAPS  # noqa: E402
from hostile_requests import (  # noqa: E402
    JSON,
    JSONPATCH,
    KEEP,
    KINDS,
    MERGE,
    STRATEGIC,
    YAML,
    Request,
    Target,
    create,
    ensure_namespace,
    generate,
    obj,
    run_case,
)

from mockgpu.backends.embedded import EmbeddedCluster  # noqa: E402
from mockgpu.backends.embedded import daemon as embedded_daemon  # noqa: E402
from mockgpu.backends.upstream import UpstreamCluster  # noqa: E402
from mockgpu.backends.upstream.binaries import missing  # noqa: E402

SPEC = ROOT / "clusters" / "empty.yaml"


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in KiB, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def descendant(pid: int, exe_name: str) -> int:
    """The first process below ``pid`` whose argv[0] ends with ``exe_name``."""
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in children(p):
            try:
                argv0 = Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if argv0.endswith(exe_name):
                return c
            todo.append(c)
    raise RuntimeError(f"no {exe_name} below pid {pid}")


@dataclass
class Outcome:
    """What is kept of one case's answer (not its body)."""

    id: str
    what: str
    status: int
    klass: str
    brief: str
    seconds: float
    wrote: list[str]


class Poller(threading.Thread):
    """GET /readyz every ``interval`` s (a new connection each time); keeps the worst latency."""

    def __init__(self, t: Target, interval: float) -> None:
        super().__init__(daemon=True)
        self.t, self.interval = t, interval
        self.stop = threading.Event()
        self.worst = 0.0
        self.over_1s = 0
        self.polls = 0
        self.failed = 0

    def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.perf_counter()
            a = self.t.send(Request("GET", "/readyz"), timeout=300)
            took = time.perf_counter() - t0
            self.polls += 1
            self.worst = max(self.worst, took)
            self.over_1s += took > 1.0
            self.failed += a.status != 200
            self.stop.wait(self.interval)


def warm_up(t: Target, n: int = 100) -> None:
    """Valid requests only, so that caches and lazy imports count in RSS before: for every kind the soak
    touches, creates as JSON and as YAML, reads (plain and as a Table), a list, each patch type the kind
    takes, a dry-run create, a short watch, deletes; then ``n`` ConfigMaps created, listed and deleted. None
    is hostile: what the hostile cases add afterwards is what the target bounds."""
    table = (("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"),)
    patches = ((MERGE, {"metadata": {"labels": {"warm": "1"}}}), (STRATEGIC, {"metadata": {"labels": {"warm": "2"}}}),
               (JSONPATCH, [{"op": "add", "path": "/metadata/labels/warm", "value": "3"}]))
    for kind in KINDS:
        for i, ct in enumerate((JSON, YAML)):
            t.send(Request("POST", kind.collection, headers=(("Content-Type", ct),),
                           body=json.dumps(obj(kind, f"warm-{i}")).encode()))
        t.send(Request("POST", kind.collection, query="dryRun=All", headers=(("Content-Type", JSON),),
                       body=json.dumps(obj(kind, "warm-dry")).encode()))
        for ct, body in patches:
            t.send(Request("PATCH", kind.item("warm-0"), headers=(("Content-Type", ct),),
                           body=json.dumps(body).encode()))
        t.send(Request("GET", kind.item("warm-0")))
        t.send(Request("GET", kind.item("warm-0"), headers=table))
        t.send(Request("GET", kind.collection, query="limit=1"))
        t.send(Request("GET", kind.collection, query="watch=1&timeoutSeconds=1", stream=True), timeout=30)
        for i in range(2):
            t.send(Request("DELETE", kind.item(f"warm-{i}")))
    for i in range(n):
        t.send(create(CONFIGMAPS, f"warm-{i}"))
        t.send(Request("GET", CONFIGMAPS.collection))
    for i in range(n):
        t.send(Request("DELETE", CONFIGMAPS.item(f"warm-{i}")))


def stored(t: Target) -> tuple[int, int]:
    """(objects, bytes of their JSON) the soak left in its namespace: what any server must keep. Names come
    from a Table list (small), sizes from each object's GET (Content-Length: an object may pass KEEP)."""
    table = (("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"),)
    objects = size = 0
    for kind in KINDS:
        a = t.send(Request("GET", kind.collection, headers=table), timeout=300)
        rows = json.loads(a.body).get("rows") or [] if a.status == 200 and len(a.body) < KEEP else []
        for row in rows:
            got = t.send(Request("GET", kind.item(row["object"]["metadata"]["name"])), timeout=300)
            if got.status == 200:
                objects += 1
                size += int({k.lower(): v for k, v in got.headers.items()}.get("content-length", len(got.body)))
    return objects, size


def soak(t: Target, pid: int, args: argparse.Namespace) -> dict:
    ensure_namespace(t)
    warm_up(t)
    time.sleep(args.settle)
    before = rss_kib(pid)[0]
    cases = generate(args.requests, args.seed)
    results: list[Outcome | None] = [None] * len(cases)
    next_i = iter(range(len(cases)))
    lock = threading.Lock()
    done_count = [0]
    t0 = time.perf_counter()
    poller = Poller(t, args.poll)

    def worker() -> None:
        while True:
            with lock:
                i = next(next_i, None)
            if i is None:
                return
            a, wrote = run_case(t, cases[i], timeout=args.timeout)
            results[i] = Outcome(cases[i].id, cases[i].request.describe(), a.status, a.klass, a.brief(), a.seconds,
                                 wrote)
            with lock:
                done_count[0] += 1
                if done_count[0] % 1000 == 0:
                    print(f"  ... {done_count[0]} requests, {time.perf_counter() - t0:.0f} s, server RSS "
                          f"{rss_kib(pid)[0] / 1024:.0f} MiB, /readyz worst {poller.worst * 1000:.0f} ms", flush=True)

    poller.start()
    workers = [threading.Thread(target=worker) for _ in range(args.workers)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    time.sleep(args.settle)
    poller.stop.set()
    poller.join()
    after, peak = rss_kib(pid)
    objects, stored_bytes = stored(t)
    done = [r for r in results if r is not None]
    return {"backend": args.backend, "seed": args.seed, "requests": len(done), "seconds": elapsed,
            "setup_requests": sum(len(c.setup) for c in cases),
            "classes": dict(collections.Counter(o.klass for o in done)),
            "cases": {o.id: o.status or o.klass for o in done},
            "server_errors": [(o.id, o.what, o.brief) for o in done if o.status >= 500 or not o.status],
            "slow": sorted(((o.seconds, o.id, o.what) for o in done if o.seconds > 1.0), reverse=True),
            "writes": [(o.id, o.wrote) for o in done if o.wrote],
            "readyz_worst_s": poller.worst, "readyz_over_1s": poller.over_1s, "readyz_polls": poller.polls,
            "readyz_failed": poller.failed, "rss_before_kib": before, "rss_after_kib": after, "rss_peak_kib": peak,
            "stored_objects": objects, "stored_bytes": stored_bytes}


def summarise(r: dict, args: argparse.Namespace, other: dict | None) -> bool:
    classes = r["classes"]
    print(f"{r['backend']}: {r['requests']} hostile requests (+{r['setup_requests']} setup requests) in "
          f"{r['seconds']:.0f} s, {args.workers} clients, seed {r['seed']}")
    print("  answers by class: " + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())))
    fives = r["server_errors"]
    excused = []
    if other is not None:
        theirs = other["cases"]
        excused = [f for f in fives if isinstance(theirs.get(f[0]), int) and theirs[f[0]] >= 500]
    open_fives = [f for f in fives if f not in excused]
    print(f"  5xx or no answer: {len(fives)}" + (f" ({len(excused)} where {other['backend']} answers 5xx too)"
                                                if other else ""))
    by_brief = collections.Counter((f[2][:90]) for f in open_fives)
    for brief, count in by_brief.most_common(8):
        example = next(f for f in open_fives if f[2][:90] == brief)
        print(f"    {count:5d} x {brief}   e.g. {example[0]} — {example[1]}")
    families = collections.Counter(cid.split()[0] for _, cid, _ in r["slow"])
    print(f"  requests over 1 s: {len(r['slow'])} ({', '.join(f'{f} {n}' for f, n in families.most_common())}); "
          "the slowest (a stalled server delays the other clients' requests too):" + "".join(
        f"\n    {s:6.1f} s  {cid} — {d}" for s, cid, d in r["slow"][:8]))
    print(f"  writes that should not have happened: {len(r['writes'])}" + "".join(
        f"\n    {cid}: {w[0]}" for cid, w in r["writes"][:5]))
    print(f"  /readyz: worst {r['readyz_worst_s'] * 1000:.0f} ms over {r['readyz_polls']} polls "
          f"({r['readyz_over_1s']} over 1 s, {r['readyz_failed']} not 200)")
    ratio = r["rss_after_kib"] / r["rss_before_kib"]
    print(f"  RSS: before {r['rss_before_kib'] / 1024:.0f} MiB, after {r['rss_after_kib'] / 1024:.0f} MiB "
          f"(peak {r['rss_peak_kib'] / 1024:.0f} MiB): after/before {ratio:.2f}x")
    if "stored_objects" in r:
        print(f"  left stored by the soak: {r['stored_objects']} objects, {r['stored_bytes'] / 2**20:.0f} MiB of JSON")
    targets = [("0 x 5xx" + (" except where upstream answers 5xx" if other else " (no --against run)"),
                not open_fives), ("/readyz never over 1 s", r["readyz_worst_s"] <= 1.0),
               ("RSS after <= 1.5 x before", ratio <= 1.5)]
    for what, ok in targets:
        print(f"  target {what}: {'met' if ok else 'MISSED'}")
    print(f"  rerun: python benchmarks/hostile.py --backend {r['backend']} --requests {args.requests} "
          f"--seed {r['seed']} --workers {args.workers}")
    return all(ok for _, ok in targets)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("embedded", "upstream"), default="embedded")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--poll", type=float, default=0.05, help="seconds between /readyz polls")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one answer")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds before measuring RSS")
    ap.add_argument("--save", type=Path, help="write the results as JSON")
    ap.add_argument("--against", type=Path, help="results of the other backend (--save): its 5xx excuse ours")
    ap.add_argument("--load", type=Path, help="summarise a saved run (--save) instead of running one")
    args = ap.parse_args()
    other = json.loads(args.against.read_text()) if args.against else None
    if args.load:
        r = json.loads(args.load.read_text())
        args.backend, args.seed, args.requests = r["backend"], r["seed"], r["requests"]
        return 0 if summarise(r, args, other) else 1
    if args.backend == "upstream" and (problem := missing()):
        ap.error(problem)
    with tempfile.TemporaryDirectory(prefix="mockgpu-hostile-") as tmp:
        if args.backend == "embedded":
            with EmbeddedCluster(SPEC, name="hostile-bench", home=tmp, in_process=False, delete_on_exit=True) as c:
                pid = int(embedded_daemon.running_endpoint(c.state)["pid"])
                r = soak(Target(int(c.url.rsplit(":", 1)[1]), str(c.state.cert_file), c.token), pid, args)
        else:
            with UpstreamCluster(SPEC, name="hostile-bench", home=tmp, delete_on_exit=True) as c:
                supervisor = int((c.state.dir / "upstream.pid").read_text())
                pid = descendant(supervisor, "kube-apiserver")
                r = soak(Target(int(c.url.rsplit(":", 1)[1]), str(c.state.cert_file), c.token), pid, args)
    if args.save:
        args.save.write_text(json.dumps(r, indent=1))
    return 0 if summarise(r, args, other) else 1


if __name__ == "__main__":
    sys.exit(main())
