"""Benchmark of container logs: disk used by a chatty container, and the API server daemon's memory for
``kubectl logs --tail=1`` of a large log.

* disk: a container (a real sandboxed process through ``ProcessRuntime``) writes ``--mb`` MB to stdout in
  1000-byte lines; the script lists the container's log files and their sizes afterwards;
* tail: an embedded cluster daemon (``mockgpu up``'s process) gets a pod bound to a node whose log is a
  ``--log-mb`` MB file; ``GET pods/<name>/log?tailLines=1`` is timed and the daemon's VmRSS/VmHWM read from
  /proc before and after.

Runs against a tree with rotated CRI logs (``podlogs.container_log_dir``) or, for a before/after comparison,
one whose API server reads a plain-text ``<container>.log`` copy (``podlogs.log_path``).

    python benchmarks/container_logs.py [--mb 250] [--log-mb 100]
"""

from __future__ import annotations

import argparse
import ssl
import tempfile
import time
import urllib.request
from pathlib import Path

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config.clusterspec import parse_spec
from mockgpu.control.apiserver import podlogs
from mockgpu.control.kubelet.container import ContainerSpec
from mockgpu.control.kubelet.runtime import ProcessRuntime

SPEC = parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "logs"},
                   "spec": {"nodePools": [{"name": "gpu", "gpu": {"model": "A100-SXM4-80GB", "count": 1}}]}})
CRI = hasattr(podlogs, "container_log_dir")


def disk(mb: int, tmp: Path) -> None:
    kw = {} if CRI else {"plain_log": lambda s: tmp / "logs" / f"{s.pod_uid}_{s.name}.log"}
    rt = ProcessRuntime(tmp / "rt", **kw)
    n = mb * 1000
    script = f'l={"x" * 999}; i=0; while [ $i -lt {n} ]; do echo "$l"; i=$((i+1)); done'
    t0 = time.monotonic()
    rt.start(ContainerSpec(pod_uid="u", pod_name="p", namespace="ns", name="c", command=("bash", "-c", script)))
    rt.wait("u", "c", timeout=1800)
    files = sorted(p for p in tmp.rglob("*.log*") if p.is_file())
    total = sum(p.stat().st_size for p in files)
    print(f"disk: {mb} MB written in {time.monotonic() - t0:.1f} s; {len(files)} log files, "
          f"{total / 2**20:.1f} MiB on disk")
    for p in files:
        print(f"  {p.relative_to(tmp)}  {p.stat().st_size:,} B")


def _status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0]) // 1024
    return out


def tail(log_mb: int, tmp: Path) -> None:
    with EmbeddedCluster(SPEC, home=tmp / "home", in_process=False) as c:
        from kubernetes import client
        core = client.CoreV1Api(c.api_client())
        core.create_namespaced_pod("default", {"metadata": {"name": "big"}, "spec": {
            "nodeName": "elsewhere", "containers": [{"name": "main", "image": "x"}]}})  # no kubelet runs it
        uid = core.read_namespaced_pod("big", "default").metadata.uid
        line = "x" * 99
        if CRI:
            from mockgpu.control.kubelet.containerlogs import cri_line
            path = podlogs.container_log_dir(c.state.dir, "default", "big", uid, "main") / "0.log"
            block = b"".join(cri_line("stdout", line) for _ in range(10000))
        else:
            path = podlogs.log_path(c.state.dir, "default", "big", uid, "main")
            block = (line + "\n").encode() * 10000
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            while fh.tell() < log_mb * 10**6:
                fh.write(block)
        pid = int(__import__("json").loads((c.state.dir / "endpoint.json").read_text())["pid"])
        cfg = c.api_client().configuration
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        req = urllib.request.Request(f"{cfg.host}/api/v1/namespaces/default/pods/big/log?tailLines=1",
                                     headers={"Authorization": f"Bearer {c.token}"})
        before = _status(pid)
        t0 = time.monotonic()
        body = urllib.request.urlopen(req, context=ctx).read()
        took = time.monotonic() - t0
        after = _status(pid)
        print(f"tail: {path.stat().st_size / 1e6:.0f} MB log, tailLines=1 -> {len(body)} B in {took * 1000:.0f} ms; "
              f"daemon VmRSS {before['VmRSS']} -> {after['VmRSS']} MiB, VmHWM {before['VmHWM']} -> "
              f"{after['VmHWM']} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=250)
    ap.add_argument("--log-mb", type=int, default=100)
    args = ap.parse_args()
    print("layout:", "rotated CRI logs" if CRI else "plain-text copy")
    with tempfile.TemporaryDirectory() as d:
        disk(args.mb, Path(d))
    with tempfile.TemporaryDirectory() as d:
        tail(args.log_mb, Path(d))


if __name__ == "__main__":
    main()
