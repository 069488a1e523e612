"""The lab image's recipe is one file that every path uses (no Docker needed here): Binder's binder/Dockerfile links
to it, the devcontainer builds it, the build context lets it and its link through, and the workshop hub's settings
agree between the one-server config, its script, the image and the Zero to JupyterHub values file."""

from __future__ import annotations

import json
import os
import re

import yaml

from .conftest import ROOT

HUB_CONFIG = (ROOT / "workshop" / "jupyterhub_config.py").read_text()
HUB_SCRIPT = (ROOT / "scripts" / "workshop-hub").read_text()
LAB_DOCKERFILE = (ROOT / "lab.Dockerfile").read_text()


def test_binder_dockerfile_is_a_link_to_the_lab_image_recipe():
    link = ROOT / "binder" / "Dockerfile"
    assert link.is_symlink() and os.readlink(link) == "../lab.Dockerfile"
    assert link.resolve() == (ROOT / "lab.Dockerfile").resolve()


def test_devcontainer_builds_the_same_recipe_and_runs_its_command():
    text = (ROOT / ".devcontainer" / "devcontainer.json").read_text()
    conf = json.loads("\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//")))
    assert conf["build"] == {"dockerfile": "../lab.Dockerfile", "context": ".."}
    assert conf["overrideCommand"] is False and 8888 in conf["forwardPorts"]


def test_lab_dockerfile_defaults_to_the_public_base_and_runs_as_uid_1000():
    assert re.search(r"^ARG BASE=python:3\.11-slim$", LAB_DOCKERFILE, re.M)
    assert re.search(r"^ARG NB_UID=1000$", LAB_DOCKERFILE, re.M)
    assert re.search(r"^USER \$\{NB_UID\}$", LAB_DOCKERFILE, re.M)
    instructions = [ln for ln in LAB_DOCKERFILE.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert not any(":latest" in ln for ln in instructions)
    assert "--ip 0.0.0.0" in LAB_DOCKERFILE.rsplit("CMD", 1)[1]


def test_the_context_admits_the_recipe_and_what_it_copies():
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip()]
    admitted = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    copied = {src for line in re.findall(r"^COPY (?!--from)(.+) \S+$", LAB_DOCKERFILE, re.M) for src in line.split()}
    assert copied <= admitted
    assert {"lab.Dockerfile", "binder/Dockerfile"} <= admitted


def _major_pin(text: str) -> str:
    (pin,) = set(re.findall(r'jupyterhub>=[\d.]+,<(\d+)', text))
    return pin


def test_hub_and_single_user_server_share_jupyterhub_s_major_version():
    assert _major_pin(HUB_SCRIPT) == _major_pin(LAB_DOCKERFILE)


def test_z2jh_values_mirror_the_one_server_recipe():
    values = yaml.safe_load((ROOT / "workshop" / "z2jh-values.yaml").read_text())
    single = values["singleuser"]
    assert single["cmd"] == "jupyterhub-singleuser" and 'cmd = ["jupyterhub-singleuser"]' in HUB_CONFIG
    assert single["uid"] == 1000
    mem = re.search(r'MOCKGPU_HUB_MEM", "(\d+)M"', HUB_CONFIG).group(1)
    assert single["memory"]["limit"] == f"{int(mem) / 1024:g}G"
    cpus = re.search(r'MOCKGPU_HUB_CPUS", "([\d.]+)"', HUB_CONFIG).group(1)
    assert single["cpu"]["limit"] == float(cpus)
    cull = re.search(r'MOCKGPU_HUB_CULL_TIMEOUT", "(\d+)"', HUB_CONFIG).group(1)
    assert values["cull"] == {"enabled": True, "timeout": int(cull), "every": 300}
    hub = values["hub"]["config"]
    assert hub["JupyterHub"]["authenticator_class"] == "shared-password"
    assert 'authenticator_class = "shared-password"' in HUB_CONFIG
    assert single["defaultUrl"].endswith("/01-why-is-my-4-gpu-job-pending.ipynb")
