"""JupyterHub for a mockgpu workshop on one server: every learner gets their own container of the lab image
(lab.Dockerfile) with their own private cluster inside, under Docker's default security options.

Started by ``scripts/workshop-hub up`` (which sets the ``MOCKGPU_HUB_*`` variables below, makes the passwords and
the Docker network, and puts configurable-http-proxy on PATH); docs/workshop-hub.md is the instructor's guide.

- Spawner: DockerSpawner (jupyterhub/dockerspawner) runs ``jupyterhub-singleuser`` in the lab image, one container
  per learner on a network of its own (made by the script without inter-container traffic), with a memory and CPU limit per learner (sized from the footprint measured by
  tests/labimage/test_workshop_hub.py; see the doc), a pids limit, and the learner's HOME on a named volume
  (first mounted from the image's HOME: the labs), so a restarted server keeps their work.
- Login: JupyterHub's own SharedPasswordAuthenticator (since 5.3): one password on the slide, any username.
  ``instructor`` logs in with the admin password instead and gets the admin panel. (Why this one, and what it does
  not protect: docs/workshop-hub.md.)
- Idle culling: the jupyterhub-idle-culler service stops servers idle longer than ``MOCKGPU_HUB_CULL_TIMEOUT``;
  stopping a server stops the learner's cluster with it.
- ``workshop-admin``: a service whose API token (a file in the state folder) lets the instructor's scripts and the
  test create users, start servers and reach them.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 -- JupyterHub's config loader provides it

env = os.environ
state = Path(env["MOCKGPU_HUB_STATE"])
name = env.get("MOCKGPU_HUB_NAME", "mockgpu-hub")  # containers <name>-<user>, network <name>, volumes <name>-<user>
port = int(env.get("MOCKGPU_HUB_PORT", "8000"))


def secret(file: str) -> str:
    return (state / file).read_text().strip()


# Where learners connect (the proxy) and where the single-user servers reach the hub (the Docker network's
# gateway address on this host, so only containers and this host see the hub's API).
c.JupyterHub.bind_url = f"http://{env.get('MOCKGPU_HUB_IP', '0.0.0.0')}:{port}"
c.JupyterHub.hub_bind_url = f"http://{env['MOCKGPU_HUB_GATEWAY']}:{port + 1}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port + 2}"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.cleanup_servers = True  # `scripts/workshop-hub down` stops every learner's container

c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = secret("learner-password")
c.SharedPasswordAuthenticator.admin_password = secret("admin-password")
c.Authenticator.admin_users = {"instructor"}
c.Authenticator.allow_all = True

c.JupyterHub.spawner_class = "docker"
c.DockerSpawner.image = env["MOCKGPU_HUB_IMAGE"]
c.DockerSpawner.pull_policy = "never"  # built on this machine by scripts/lab-image
c.DockerSpawner.network_name = name
c.DockerSpawner.use_internal_ip = True
c.DockerSpawner.prefix = name
c.DockerSpawner.remove = True  # a stopped server's container goes; its HOME volume stays
c.DockerSpawner.cmd = ["jupyterhub-singleuser"]  # not the image's `mockgpu lab`: the hub authenticates
c.DockerSpawner.notebook_dir = "/home/learner/labs"
c.DockerSpawner.volumes = {f"{name}-{{username}}": "/home/learner"}
c.DockerSpawner.mem_limit = env.get("MOCKGPU_HUB_MEM", "1536M")
c.DockerSpawner.cpu_limit = float(env.get("MOCKGPU_HUB_CPUS", "1"))
c.DockerSpawner.extra_host_config = {"pids_limit": int(env.get("MOCKGPU_HUB_PIDS", "1024"))}
c.Spawner.default_url = "/lab/tree/01-why-is-my-4-gpu-job-pending.ipynb"
c.Spawner.start_timeout = 180  # many learners starting at once on few cores
c.Spawner.http_timeout = 180

cull = int(env.get("MOCKGPU_HUB_CULL_TIMEOUT", "3600"))
c.JupyterHub.services = [
    {"name": "idle-culler",
     "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={cull}", "--cull-every=60"]},
    {"name": "workshop-admin", "api_token": secret("admin-api-token")},
]
c.JupyterHub.load_roles = [
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
    {"name": "workshop-admin", "services": ["workshop-admin"],
     "scopes": ["admin:users", "admin:servers", "access:servers", "list:users", "read:users", "read:servers"]},
]
