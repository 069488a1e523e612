"""The workshop hub (scripts/workshop-hub, workshop/jupyterhub_config.py) on this machine: it comes up, three
learners each get their own server from the lab image (DockerSpawner, Docker's default security), and each runs
lab 01 to the end at the same time, through the hub's REST API and the single-user servers' Jupyter API (the
kernel websocket, as JupyterLab drives it). Measures each learner's footprint (``docker stats``: peak while the lab
runs, and with the lab's cluster idle) and the hub's own, prints them and writes them to the hub's state folder
(footprint.json), from which docs/workshop-hub.md's sizing comes. Skips, saying why, when there is no Docker engine,
no lab image can be built, or the hub's packages cannot be installed (no npm, no PyPI)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
import uuid

import pytest

from .conftest import ROOT
from .remote_kernel import close_session, run_notebook

# a container build, hub start and notebook runs take minutes (the suite default is 300 s)
pytestmark = pytest.mark.timeout(1800)

SCRIPT = ROOT / "scripts" / "workshop-hub"
LEARNERS = ["ada", "grace", "linus"]
LAB = "solutions/01-why-is-my-4-gpu-job-pending.ipynb"
CODE_CELLS = sum(c["cell_type"] == "code" for c in json.loads((ROOT / "labs" / LAB).read_text())["cells"])
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1000, "MB": 10**6, "GB": 10**9}


def free_port_triple() -> int:
    """A port p with p, p+1, p+2 free on 127.0.0.1 (the hub, its API, the proxy's API)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p > 65000:
            continue
        ok = True
        for q in (p, p + 1, p + 2):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no three consecutive free ports")


def to_bytes(text: str) -> float:
    m = re.match(r"([\d.]+)\s*([A-Za-z]+)", text.strip())
    assert m, text
    return float(m.group(1)) * UNITS[m.group(2)]


class Stats(threading.Thread):
    """``docker stats`` of the learners' containers every few seconds: peak and last memory, peak CPU (%)."""

    def __init__(self, prefix: str) -> None:
        super().__init__(daemon=True)
        self.prefix, self.stop, self.peak, self.last, self.cpu = prefix, threading.Event(), {}, {}, {}

    def sample(self) -> dict[str, tuple[float, float]]:
        out = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.Name}}\t{{.MemUsage}}\t{{.CPUPerc}}"],
                             capture_output=True, text=True, timeout=60).stdout
        got = {}
        for line in out.splitlines():
            name, mem, cpu = line.split("\t")
            if name.startswith(self.prefix):
                got[name] = (to_bytes(mem.split("/")[0]), float(cpu.rstrip("%") or 0))
        return got

    def run(self) -> None:
        while not self.stop.is_set():
            for name, (mem, cpu) in self.sample().items():
                self.peak[name] = max(self.peak.get(name, 0), mem)
                self.cpu[name] = max(self.cpu.get(name, 0), cpu)
                self.last[name] = mem
            self.stop.wait(2)


def rss_of(pidfile) -> float:
    try:
        pid = pidfile.read_text().strip()
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0.0


def api(base: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(f"{base}/hub/api{path}", method=method, headers={"Authorization": f"token {token}"},
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=60) as resp:
        data = resp.read()
        return resp.status, (json.loads(data) if data else {})


@pytest.fixture
def hub(lab_image, tmp_path):
    if not shutil.which("npm"):
        pytest.skip("no npm: configurable-http-proxy comes from npm (apt-get install npm)")
    name = f"mockgpu-hubtest-{uuid.uuid4().hex[:6]}"
    port = free_port_triple()
    env = dict(os.environ, MOCKGPU_HUB_NAME=name, MOCKGPU_HUB_PORT=str(port), MOCKGPU_HUB_IP="127.0.0.1",
               MOCKGPU_HUB_STATE=str(tmp_path / "hub"), MOCKGPU_HUB_IMAGE=lab_image)
    r = subprocess.run([str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=900)
    try:
        if r.returncode != 0 and ("pip" in r.stderr or "npm" in r.stderr) and "JupyterHub" not in r.stderr:
            pytest.skip(f"the hub's packages could not be installed: {r.stderr.strip().splitlines()[-1:]}")
        assert r.returncode == 0, r.stderr + (tmp_path / "hub" / "jupyterhub.log").read_text()[-3000:]
        again = subprocess.run([str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "starting JupyterHub" not in again.stderr  # idempotent: already up
        yield {"base": f"http://127.0.0.1:{port}", "name": name, "image": lab_image, "state": tmp_path / "hub",
               "token": (tmp_path / "hub" / "admin-api-token").read_text().strip(),
               "password": (tmp_path / "hub" / "learner-password").read_text().strip()}
    finally:
        d = subprocess.run([str(SCRIPT), "down", "--volumes"], env=env, capture_output=True, text=True, timeout=300)
        assert d.returncode == 0, d.stderr
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"name=^/{name}-"], capture_output=True, text=True)
        assert left.stdout.strip() == "", "learner containers left behind"


def test_three_learners_run_lab_01_through_the_hub(hub):
    base, token = hub["base"], hub["token"]
    # the login page is the hub's (learners log in there with the shared password)
    with urllib.request.urlopen(f"{base}/hub/login", timeout=30) as resp:
        assert resp.status == 200 and b"password" in resp.read().lower()
    status, users = api(base, token, "POST", "/users", {"usernames": LEARNERS})
    assert status == 201 and sorted(u["name"] for u in users) == LEARNERS
    stats = Stats(hub["name"] + "-")
    stats.start()
    t0 = time.monotonic()
    for u in LEARNERS:
        status, _ = api(base, token, "POST", f"/users/{u}/server")
        assert status in (201, 202)
    deadline = time.monotonic() + 300
    while True:
        ready = {u: (api(base, token, "GET", f"/users/{u}")[1]["servers"].get("") or {}).get("ready") for u in LEARNERS}
        if all(ready.values()):
            break
        assert time.monotonic() < deadline, f"servers not ready in 300 s: {ready}"
        time.sleep(2)
    spawn_s = time.monotonic() - t0
    # each learner's server is their own container of the lab image, under Docker's default security
    for u in LEARNERS:
        info = json.loads(subprocess.run(["docker", "inspect", f"{hub['name']}-{u}"], capture_output=True,
                                         text=True, check=True).stdout)[0]
        assert info["Config"]["Image"] == hub["image"]
        host = info["HostConfig"]
        assert not host["Privileged"] and not host["CapAdd"] and not host["SecurityOpt"], host
        # the per-learner limits (DockerSpawner's cpu_limit is a CFS quota per 100 ms period)
        assert host["Memory"] > 0 and host["CpuQuota"] > 0 and host["PidsLimit"] > 0, host

    # and cannot reach one another's servers (the hub's network has no inter-container traffic)
    ip = {u: json.loads(subprocess.run(["docker", "inspect", f"{hub['name']}-{u}"], capture_output=True, text=True,
                                       check=True).stdout)[0]["NetworkSettings"]["Networks"][hub["name"]]["IPAddress"]
          for u in LEARNERS}
    probe = ("import socket, sys; s = socket.socket(); s.settimeout(3)\n"
             "try:\n s.connect((sys.argv[1], 8888)); print('reached')\nexcept OSError as e:\n print('refused', e)")
    r = subprocess.run(["docker", "exec", f"{hub['name']}-{LEARNERS[0]}", "python", "-c", probe, ip[LEARNERS[1]]],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.startswith("refused"), r

    async def all_learners():
        return await asyncio.gather(*(run_notebook(f"{base}/user/{u}", token, LAB, keep_kernel=True)
                                      for u in LEARNERS))

    t1 = time.monotonic()
    runs = asyncio.run(all_learners())
    lab_s = time.monotonic() - t1
    for u, run in zip(LEARNERS, runs, strict=True):
        assert run.ok, f"{u}: {run.failures()}"
        assert len(run.cells) == CODE_CELLS  # every code cell ran (run_notebook stops at the first failure)
    time.sleep(10)  # the labs' clusters idle (their kernels still up)
    idle = stats.sample()
    stats.stop.set()
    stats.join()

    async def close_all():
        await asyncio.gather(*(close_session(f"{base}/user/{u}", token, r.session_id)
                               for u, r in zip(LEARNERS, runs, strict=True)))

    asyncio.run(asyncio.wait_for(close_all(), 60))
    mib = 1 << 20
    report = {
        "learners": len(LEARNERS), "cores": os.cpu_count(), "spawn_seconds": round(spawn_s, 1),
        "lab01_seconds_all_at_once": round(lab_s, 1),
        "peak_mib": {k: round(v / mib) for k, v in stats.peak.items()},
        "idle_with_cluster_mib": {k: round(v[0] / mib) for k, v in idle.items()},
        "idle_cpu_percent": {k: v[1] for k, v in idle.items()},
        "peak_cpu_percent": stats.cpu,
        "hub_rss_mib": round(rss_of(hub["state"] / "jupyterhub.pid") / mib),
        "proxy_rss_mib": round(rss_of(hub["state"] / "proxy.pid") / mib),
    }
    (hub["state"] / "footprint.json").write_text(json.dumps(report, indent=1))
    (ROOT / ".cache" / "workshop-hub").mkdir(parents=True, exist_ok=True)
    (ROOT / ".cache" / "workshop-hub" / "footprint.json").write_text(json.dumps(report, indent=1))
    print("\nworkshop hub footprint:", json.dumps(report, indent=1))
    assert len(report["peak_mib"]) == len(LEARNERS)
