"""KindBackend.up/down/list driven through a scripted runner: step order, cleanup of a half-created
cluster, refusing a taken name, dry-run touching nothing. (The real thing is in test_kind_e2e.py.)"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import yaml

from mockgpu.backends.base import UpOptions
from mockgpu.backends.common.images import mockgpu_image
from mockgpu.backends.common.kueue import kind_manifests, kueue_image
from mockgpu.backends.common.run import Result
from mockgpu.backends.kind import KindBackend
from mockgpu.config.clusterspec import KueueSpec
from mockgpu.errors import MockgpuError

from .conftest import FakeRunner


def _nodes_json(gpus: dict[str, dict[str, str]]) -> str:
    items = [{"metadata": {"name": f"n-{spec_node}", "labels": {"mockgpu.io/node": spec_node}},
              "status": {"allocatable": {"cpu": "8", **alloc}}} for spec_node, alloc in gpus.items()]
    return json.dumps({"items": items})


READY = {"whole-0": {"nvidia.com/gpu": "4"}, "mig-0": {"nvidia.com/mig-1g.10gb": "8"},
         "shared-0": {"nvidia.com/gpu": "8"}}


class Cluster:
    """A scripted docker/kind/kubectl: state is whether the cluster exists; `fail` names a step to break."""

    def __init__(self, exists=False, fail=None, gpus=READY, kind="v0.31.0", errors=None):
        self.exists, self.fail, self.gpus, self.kind = exists, fail, gpus, kind
        self.errors = errors or {}  # command prefix -> stderr of a failure, for failures other than `fail`

    def __call__(self, args, stdin):
        cmd = " ".join(args)
        if self.fail and cmd.startswith(self.fail):
            return Result(1, "", "boom: something broke\n")
        for prefix, stderr in self.errors.items():
            if cmd.startswith(prefix):
                return Result(1, "", stderr)
        if cmd.startswith("docker info"):
            return Result(0, "28.2.2\n", "")
        if cmd.startswith("docker version"):
            return Result(0, "linux/amd64\n", "")
        if cmd.startswith("docker save"):
            Path(args[args.index("-o") + 1]).write_bytes(b"tar")  # what `docker save -o` leaves behind
            return Result(0, "", "")
        if cmd.startswith("kind version"):
            return Result(0, f"kind {self.kind} go1.25 linux/amd64\n", "")
        if cmd.startswith("kubectl version"):
            return Result(0, "Client Version: v1.35.0\n", "")
        if cmd == "kind get clusters":
            return Result(0, "workshop\n" if self.exists else "", "" if self.exists else "No kind clusters found.\n")
        if cmd.startswith("kind get nodes"):
            return Result(0, "workshop-control-plane\nworkshop-worker\nworkshop-worker2\n", "")
        if cmd.startswith("kind create cluster"):
            self.exists = True
            return Result(0, "", "")
        if cmd.startswith("kind delete cluster"):
            self.exists = False
            return Result(0, "", "")
        if "get nodes -o json" in cmd:
            return Result(0, _nodes_json(self.gpus), "")
        return Result(0, "", "")


def _up(tmp_path, workshop, handler, **kw):
    runner = FakeRunner(handler)
    out = io.StringIO()
    backend = KindBackend(runner=runner, out=out, state_root=tmp_path)
    return backend, runner, out, UpOptions(spec=workshop, name="workshop", **kw)


def test_up_runs_the_named_steps_in_order(tmp_path, workshop):
    backend, runner, out, opts = _up(tmp_path, workshop, Cluster())
    info = backend.up(opts)
    assert info.state == "running" and info.kubeconfig == tmp_path / "workshop" / "kubeconfig"
    def first(*prefix):
        return next(i for i, c in enumerate(runner.calls) if c[: len(prefix)] == list(prefix))

    kubectl = ["kubectl", "--kubeconfig", str(info.kubeconfig), "--context", "kind-workshop"]
    steps = [first("docker", "info"), first("kind", "get", "clusters"), first("docker", "build"),
             first("kind", "create", "cluster"), first("kind", "load", "docker-image"),
             first(*kubectl, "apply"), first(*kubectl, "get", "nodes")]
    assert steps == sorted(steps)
    build = next(c for c in runner.calls if c[:2] == ["docker", "build"])
    assert build[2:4] == ["-t", mockgpu_image()]
    create = next(c for c in runner.calls if c[:3] == ["kind", "create", "cluster"])
    config = yaml.safe_load((tmp_path / "workshop" / "kind-config.yaml").read_text())
    assert create[create.index("--config") + 1] == str(tmp_path / "workshop" / "kind-config.yaml")
    assert len(config["nodes"]) == 3  # the spec's three nodes, the first one kind's control plane
    assert all((tmp_path / "workshop" / n / "driver").is_dir() for n in ("whole-0", "mig-0", "shared-0"))
    # the plugin (root, no capabilities) writes into the user's driver folders; only the user reaches them
    assert {oct((tmp_path / "workshop" / n / "driver").stat().st_mode & 0o777) for n in ("whole-0", "mig-0")} == {
        oct(0o777)}
    assert (tmp_path / "workshop").stat().st_mode & 0o777 == 0o700
    applied = runner.inputs[next(i for i, c in enumerate(runner.calls) if "apply" in c)]
    assert [d["kind"] for d in yaml.safe_load_all(applied)][-1] == "DaemonSet"
    text = out.getvalue()
    for step in ("[1/6] preflight", "[2/6] build image", "[3/6] create cluster workshop (3 nodes)",
                 "[4/6] load image", "[5/6] apply manifests", "[6/6] wait for GPUs in node allocatable"):
        assert f"{step} ...\n" in text and f"{step} done (" in text
    assert "whole-0: nvidia.com/gpu=4" in text and "kind cluster 'workshop' is up in" in text


@pytest.mark.parametrize(("retain", "deleted"), [(False, True), (True, False)], ids=["cleanup", "retain"])
def test_failure_after_create_deletes_the_half_created_cluster_unless_retained(tmp_path, workshop, retain, deleted):
    handler = Cluster(fail="kind load")  # both `kind load docker-image` and the image-archive fallback
    backend, runner, out, opts = _up(tmp_path, workshop, handler, retain=retain)
    with pytest.raises(MockgpuError, match="`kind load image-archive` failed: boom: something broke"):
        backend.up(opts)
    assert runner.called("kind", "delete", "cluster") is deleted
    assert handler.exists is not deleted
    create = next(c for c in runner.calls if c[:3] == ["kind", "create", "cluster"])
    assert ("--retain" in create) is retain
    assert "[4/6] load image failed after" in out.getvalue()


def test_failed_build_never_creates_a_cluster(tmp_path, workshop):
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(fail="docker build"))
    with pytest.raises(MockgpuError, match="docker build"):
        backend.up(opts)
    assert not runner.called("kind", "create", "cluster") and not runner.called("kind", "delete", "cluster")


def test_a_taken_name_is_refused_before_anything_is_created(tmp_path, workshop):
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(exists=True))
    with pytest.raises(MockgpuError, match="a kind cluster named 'workshop' already exists .*half-created"):
        backend.up(opts)
    assert not runner.called("kind", "create", "cluster") and not runner.called("kind", "delete", "cluster")


def test_no_docker_fails_in_preflight_with_one_line(tmp_path, workshop):
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(fail="docker info"))
    with pytest.raises(MockgpuError) as err:
        backend.up(opts)
    assert "Docker daemon is not reachable" in str(err.value) and "\n" not in str(err.value)
    assert not runner.called("kind", "create", "cluster")


def test_wait_times_out_naming_nodes_without_gpus(tmp_path, workshop):
    handler = Cluster(gpus={**READY, "mig-0": {}})
    backend, runner, _, opts = _up(tmp_path, workshop, handler)
    with pytest.raises(MockgpuError, match=r"no GPUs in allocatable on mig-0: see `kubectl -n mockgpu-system logs"):
        backend.up(opts)
    assert runner.slept >= 180 and runner.called("kind", "delete", "cluster")


def test_dry_run_prints_the_stream_and_runs_nothing(tmp_path, workshop, capsys):
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(), dry_run=True)
    info = backend.up(opts)
    assert runner.calls == [] and info.state == "dry-run"
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["kind"] == "Cluster" and docs[-1]["kind"] == "DaemonSet"
    assert not (tmp_path / "workshop").exists()


def test_fake_gpu_operator_skips_the_image_and_installs_the_chart(tmp_path, workshop):
    backend, runner, out, opts = _up(tmp_path, workshop, Cluster(), device_plugin="fake-gpu-operator")
    backend.up(opts)
    assert not runner.called("docker", "build") and not runner.called("kind", "load")
    assert runner.called("helm", "upgrade", "--install", "gpu-operator")
    values = yaml.safe_load((tmp_path / "workshop" / "fake-gpu-operator-values.yaml").read_text())
    assert values["topology"]["nodePools"]["whole"]["gpuCount"] == 4
    assert "fake-gpu-operator cannot express: pool mig: MIG layout" in out.getvalue()


def test_unknown_device_plugin_is_bad_input(tmp_path, workshop):
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(), device_plugin="hami")
    with pytest.raises(MockgpuError, match="unknown device plugin 'hami'") as err:
        backend.up(opts)
    assert err.value.exit_code == 2 and runner.calls == []


def test_down_deletes_cluster_and_state(tmp_path, workshop):
    (tmp_path / "workshop" / "whole-0" / "driver" / "ledgers").mkdir(parents=True)
    (tmp_path / "workshop" / "whole-0" / "driver" / "ledgers" / "GPU-0.json").write_text("{}")
    backend, runner, _, _ = _up(tmp_path, workshop, Cluster(exists=True))
    backend.down("workshop")
    assert runner.called("kind", "delete", "cluster", "--name", "workshop")
    assert not (tmp_path / "workshop").exists()


def test_down_empties_the_driver_folders_inside_each_node_before_deleting(tmp_path, workshop):
    backend, runner, _, _ = _up(tmp_path, workshop, Cluster(exists=True))
    backend.down("workshop")
    execs = [c for c in runner.calls if c[:2] == ["docker", "exec"]]
    # every kind node is a spec node with a driver mount, the control plane too
    assert [c[2] for c in execs] == ["workshop-control-plane", "workshop-worker", "workshop-worker2"]
    script = execs[0][-1]
    assert execs[0][3:5] == ["sh", "-c"] and "systemctl stop kubelet" in script and "crictl rmp --all --force" in script
    assert script.endswith("find /var/lib/mockgpu/driver -mindepth 1 -delete")  # the contents, not the mount point
    delete = runner.calls.index(["kind", "delete", "cluster", "--name", "workshop"])
    assert all(runner.calls.index(c) < delete for c in execs)


def test_down_names_what_it_could_not_remove(tmp_path, workshop, monkeypatch):
    """Tests run as root, where permissions never fail: a patched os.unlink refuses one file, as it would
    for a non-root user facing a root-owned file the in-node cleanup missed (a node already stopped)."""
    ledgers = tmp_path / "workshop" / "mig-0" / "driver" / "ledgers"
    ledgers.mkdir(parents=True)
    (ledgers / "GPU-1.json").write_text("{}")
    (tmp_path / "workshop" / "kind-config.yaml").write_text("")
    real_unlink = os.unlink

    def unlink(path, *, dir_fd=None):
        if os.path.basename(path) == "GPU-1.json":
            raise PermissionError(13, "Permission denied", path)
        return real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink)
    backend, runner, _, _ = _up(tmp_path, workshop, Cluster(exists=True))
    with pytest.raises(MockgpuError) as err:
        backend.down("workshop")
    msg = str(err.value)
    assert "\n" not in msg and runner.called("kind", "delete", "cluster", "--name", "workshop")
    state = tmp_path / "workshop"
    assert msg.startswith(f"kind cluster 'workshop' deleted, but 5 entries under {state} could not be removed "
                          f"({ledgers / 'GPU-1.json'}, {ledgers}, {ledgers.parent}, ...;")
    assert msg.endswith(f"run `sudo rm -rf {state}`")
    assert not (state / "kind-config.yaml").exists() and (ledgers / "GPU-1.json").exists()


CTR_ERROR = ("ERROR: failed to load image: command \"docker exec --privileged -i workshop-control-plane ctr "
             "--namespace=k8s.io images import --all-platforms --digests --snapshotter=overlayfs -\" failed with "
             "error: exit status 1\nCommand Output: ctr: content digest sha256:82014a3c: not found\n")


@pytest.mark.parametrize(("errors", "platform", "archive"), [
    ({}, None, False),
    ({"kind load docker-image": CTR_ERROR}, ["--platform", "linux/amd64"], True),
    ({"kind load docker-image": CTR_ERROR, "docker version": "Error response from daemon\n"}, [], True),
], ids=["docker-image-works", "containerd-store-fallback", "fallback-platform-unknown"])
def test_load_image_falls_back_to_an_archive_of_one_platform(tmp_path, workshop, errors, platform, archive):
    backend, runner, out, opts = _up(tmp_path, workshop, Cluster(errors=errors))
    backend.up(opts)
    image = mockgpu_image()
    tar = str(tmp_path / "workshop" / "mockgpu-image.tar")
    assert runner.called("kind", "load", "docker-image", image, "--name", "workshop")
    assert runner.called("docker", "save", *(platform or []), "-o", tar, image) is archive
    assert runner.called("kind", "load", "image-archive", tar, "--name", "workshop") is archive
    assert not Path(tar).exists()  # removed after loading
    note = ("`kind load docker-image` failed (Command Output: ctr: content digest sha256:82014a3c: not found); "
            "retrying with `docker save` + `kind load image-archive`")
    assert (note in out.getvalue()) is archive


def test_failed_archive_load_is_one_line_and_leaves_no_tar(tmp_path, workshop):
    errors = {"kind load docker-image": CTR_ERROR, "kind load image-archive": "ERROR: no space left on device\n"}
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(errors=errors))
    with pytest.raises(MockgpuError, match="^`kind load image-archive` failed: ERROR: no space left on device$"):
        backend.up(opts)
    assert not (tmp_path / "workshop" / "mockgpu-image.tar").exists()
    assert runner.called("kind", "delete", "cluster")


def test_too_old_kind_is_refused_before_the_image_is_built(tmp_path, workshop):
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster(kind="v0.29.0"))
    with pytest.raises(MockgpuError, match=r"^kind v0\.29\.0 is older than v0\.31\.0, which published the pinned node "
                                            r"image kindest/node:v1\.35\.0: install kind v0\.31\.0 or newer"):
        backend.up(opts)
    assert not runner.called("docker", "build") and not runner.called("kind", "create", "cluster")


def test_down_of_an_unknown_cluster_says_which_exist(tmp_path, workshop):
    backend, _, _, _ = _up(tmp_path, workshop, Cluster(exists=True))
    with pytest.raises(MockgpuError, match=r"no kind cluster named 'other' \(kind clusters: workshop\)"):
        backend.down("other")


def test_list_reads_kind_and_the_kubeconfig(tmp_path, workshop):
    kubeconfig = tmp_path / "workshop" / "kubeconfig"
    kubeconfig.parent.mkdir(parents=True)
    kubeconfig.write_text(yaml.safe_dump({"clusters": [
        {"name": "kind-workshop", "cluster": {"server": "https://127.0.0.1:43123"}}]}))

    def handler(args, stdin):
        if args[:2] == ["docker", "inspect"]:
            return Result(0, "true\n", "")
        return Cluster(exists=True)(args, stdin)

    backend, _, _, _ = _up(tmp_path, workshop, handler)
    (info,) = backend.list()
    assert (info.name, info.backend, info.endpoint, info.state) == ("workshop", "kind", "https://127.0.0.1:43123",
                                                                    "running")


def test_up_writes_the_scheduler_file_it_mounts(tmp_path, workshop):
    sched = tmp_path / "sched.yaml"
    sched.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    backend, runner, _, opts = _up(tmp_path / "state", workshop, Cluster(), scheduler_config=sched)
    backend.up(opts)
    config = yaml.safe_load((tmp_path / "state" / "workshop" / "kind-config.yaml").read_text())
    mounted = config["nodes"][0]["extraMounts"][-1]["hostPath"]
    generated = yaml.safe_load(Path(mounted).read_text())
    assert generated["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf"


def test_a_local_python_base_is_passed_as_the_build_argument(tmp_path, workshop, monkeypatch):
    monkeypatch.setenv("MOCKGPU_PYTHON_BASE", "mockgpu/python-base:bookworm")
    backend, runner, _, opts = _up(tmp_path, workshop, Cluster())
    backend.up(opts)
    build = next(c for c in runner.calls if c[:2] == ["docker", "build"])
    assert build[2:6] == ["--build-arg", "BASE=mockgpu/python-base:bookworm", "-t", mockgpu_image()]


class CgroupV1Host(Cluster):
    """Docker on cgroup v1, and a node image (scripts/kind-node-image) that has no CoreDNS image."""

    def __call__(self, args, stdin):
        cmd = " ".join(args)
        if cmd == "docker info --format {{.CgroupVersion}}":
            return Result(0, "1\n", "")
        if cmd.startswith("docker image inspect") and "kubeadm-skip-phases" in cmd:
            return Result(0, "addon/coredns\n", "")
        return super().__call__(args, stdin)


def test_up_adds_the_patches_the_docker_host_and_node_image_need(tmp_path, workshop):
    backend, runner, out, opts = _up(tmp_path, workshop, CgroupV1Host())
    backend.up(opts)
    config = yaml.safe_load((tmp_path / "workshop" / "kind-config.yaml").read_text())
    patches = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    assert {"kind": "KubeletConfiguration", "failCgroupV1": False} in patches
    assert {"kind": "InitConfiguration", "skipPhases": ["preflight", "addon/coredns"]} in patches


def test_up_adds_no_patches_on_cgroup_v2_with_a_complete_node_image(tmp_path, workshop):
    backend, runner, out, opts = _up(tmp_path, workshop, Cluster())  # docker info says "28.2.2", no label
    backend.up(opts)
    config = yaml.safe_load((tmp_path / "workshop" / "kind-config.yaml").read_text())
    docs = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    assert [d["kind"] for d in docs] == ["ClusterConfiguration"]  # only the scheduler's log flags


KUEUE_RELEASE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
     "spec": {"template": {"spec": {"containers": [
         {"name": "manager", "image": "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main",
          "imagePullPolicy": "Always"}]}}}},
]


class KueueCluster(Cluster):
    """The scripted cluster plus the Kueue image: ``docker cp`` out of it leaves the release manifests."""

    def __init__(self, image=True, **kw):
        super().__init__(**kw)
        self.image = image

    def __call__(self, args, stdin):
        cmd = " ".join(args)
        if cmd == f"docker image inspect {kueue_image()}":
            return Result(0 if self.image else 1, "", "" if self.image else "No such image\n")
        if cmd == f"docker create {kueue_image()}":
            return Result(0, "c0ffee\n", "")
        if cmd.startswith("docker cp c0ffee:/kueue/manifests.yaml "):
            Path(args[-1]).write_text(yaml.safe_dump_all(KUEUE_RELEASE))
            return Result(0, "", "")
        return super().__call__(args, stdin)


def _kueue(spec):
    return spec.model_copy(update={"spec": spec.spec.model_copy(update={"kueue": KueueSpec(enabled=True)})})


def test_up_with_kueue_installs_it_from_the_kueue_image(tmp_path, workshop):
    backend, runner, out, opts = _up(tmp_path, _kueue(workshop), KueueCluster())
    info = backend.up(opts)
    assert info.kueue is True
    i_gpus = next(i for i, c in enumerate(runner.calls) if "get" in c and "nodes" in c)
    i_load = next(i for i, c in enumerate(runner.calls) if c[:4] == ["kind", "load", "docker-image", kueue_image()])
    i_apply = next(i for i, c in enumerate(runner.calls) if "--server-side" in c)
    i_probe = next(i for i, c in enumerate(runner.calls) if "--dry-run=server" in c)
    assert i_gpus < i_load < i_apply < i_probe
    assert runner.called("docker", "rm", "c0ffee")  # the container made only to copy the manifests out
    applied = list(yaml.safe_load_all(runner.inputs[i_apply]))
    manager = applied[1]["spec"]["template"]["spec"]["containers"][0]
    assert (manager["image"], manager["imagePullPolicy"]) == (kueue_image(), "Never")
    assert "[7/7] install Kueue (mockgpu/kueue:" in out.getvalue()


def test_up_with_kueue_but_no_image_says_how_before_creating_anything(tmp_path, workshop):
    backend, runner, _, opts = _up(tmp_path, _kueue(workshop), KueueCluster(image=False))
    with pytest.raises(MockgpuError, match=r"spec.kueue needs the image mockgpu/kueue:v\S+: build Kueue with "
                                           r"`scripts/upstream-build kueue`, then `scripts/kind-images kueue`"):
        backend.up(opts)
    assert not runner.called("kind", "create", "cluster") and not runner.called("docker", "build")


def test_kind_manifests_refuse_a_release_without_the_manager():
    with pytest.raises(ValueError, match="no Deployment kueue-controller-manager"):
        kind_manifests(KUEUE_RELEASE[:1], "img")
