"""The widgets' only door to a cluster: the official ``kubernetes`` client, raw JSON in, plain dicts out.

``connect()`` finds the cluster (an explicit kubeconfig, else ``$MOCKGPU_KUBECONFIG``, else the client's
usual ``$KUBECONFIG`` / ``~/.kube/config``). A cluster that does not answer raises ``ClusterGone``, whose
message says how to bring it back, so a widget can show one sentence instead of a traceback.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mockgpu.errors import MockgpuError
from mockgpu.sched.dra.claimname import claim_name_or_empty
from mockgpu.widgets.snapshot import GPU_STATE_LABEL, GPU_STATE_NAMESPACE, Obj, Snapshot

DEFAULT_UP_COMMAND = "mockgpu up --spec clusters/seed-4x2.yaml"
T = TypeVar("T")


class ClusterGone(MockgpuError):
    """The cluster does not answer (stopped, deleted, or the kubeconfig points nowhere)."""


class ApiRefused(MockgpuError):
    """The API server answered with an error Status (e.g. 422 Invalid); ``code`` and ``reason`` kept."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


def _status_of(exc: Any) -> ApiRefused:
    """Turn an ``ApiException`` into ``ApiRefused`` with the Status message the server sent."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    message = body.get("message") or str(exc.reason or exc)
    return ApiRefused(int(exc.status or 0), str(body.get("reason") or exc.reason or ""), message)


# The embedded and upstream kubelets tell the fake CUDA which pod and container a process is (nvidia-smi's
# process table, the OOM log: mockgpu.gpu.cuda.process_identity); a real kubelet does it through the downward API.
_IDENTITY_ENV = (("MOCKGPU_POD_NAME", "metadata.name"), ("MOCKGPU_POD_NAMESPACE", "metadata.namespace"))


def with_image(manifest: Obj, image: tuple[str, str] | None) -> Obj:
    """A copy of the Pod/Job/Deployment ``manifest`` for real kubelets (kind): its containers use ``(image, pull
    policy)`` and get the pod identity the fake CUDA reads (downward API); the manifest itself when ``image`` is
    None (the caller's dict is never changed: a lab may print it)."""
    if image is None:
        return manifest

    out = copy.deepcopy(manifest)
    spec = out["spec"]
    pod_spec = spec["template"]["spec"] if "template" in spec else spec
    for container in pod_spec.get("containers") or []:
        container["image"], container["imagePullPolicy"] = image
        env = container.setdefault("env", [])
        have = {e.get("name") for e in env}
        env += [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
                for name, path in _IDENTITY_ENV if name not in have]
        if "MOCKGPU_CONTAINER_NAME" not in have:
            env.append({"name": "MOCKGPU_CONTAINER_NAME", "value": container["name"]})
    return out


class ClusterClient:
    """Lists and creates the objects the widgets need; every call raises ClusterGone or ApiRefused, nothing raw."""

    def __init__(self, api_client: Any, *, up_command: str = DEFAULT_UP_COMMAND) -> None:
        from kubernetes import client

        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.resource = client.ResourceV1Api(api_client)  # resource.k8s.io/v1: Dynamic Resource Allocation
        self.scheduling = client.SchedulingV1beta1Api(api_client)  # PodGroups (GenericWorkload)
        self.up_command = up_command
        # Set by LabCluster for a backend whose nodes run real containers (kind): (image, pull policy) put on
        # every container of a pod created here. None: manifests as they are.
        self.image_override: tuple[str, str] | None = None

    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    def _call(self, fn: Callable[[], T]) -> T:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn()
        except ApiException as exc:
            if exc.status in (0, None, 502, 503, 504):
                raise self._gone(str(exc.reason)) from None
            raise _status_of(exc) from None
        except (HTTPError, OSError) as exc:
            raise self._gone(type(exc).__name__) from None

    def _gone(self, why: str) -> ClusterGone:
        return ClusterGone(f"the cluster at {self.host} does not answer ({why}). "
                           f"Bring it back with: {self.up_command}")

    def _json(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Obj:
        resp = self._call(lambda: fn(*args, _preload_content=False, **kw))
        return json.loads(resp.data)

    def list_nodes(self) -> list[Obj]:
        return self._json(self.core.list_node)["items"]

    def list_pods(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        kw = {"label_selector": label_selector} if label_selector else {}
        if namespace:
            return self._json(self.core.list_namespaced_pod, namespace, **kw)["items"]
        return self._json(self.core.list_pod_for_all_namespaces, **kw)["items"]

    def list_events(self, namespace: str | None = None) -> list[Obj]:
        if namespace:
            return self._json(self.core.list_namespaced_event, namespace)["items"]
        return self._json(self.core.list_event_for_all_namespaces)["items"]

    def list_gpu_states(self) -> list[Obj]:
        return self._json(self.core.list_namespaced_config_map, GPU_STATE_NAMESPACE,
                          label_selector=f"{GPU_STATE_LABEL}=true")["items"]

    def snapshot(self, namespace: str | None = None) -> Snapshot:
        """Nodes, pods, events, GPU states and ResourceClaims, read now (of one namespace if given)."""
        return Snapshot.of(self.list_nodes(), self.list_pods(namespace), self.list_events(namespace),
                           self.list_gpu_states(), claims=self.list_claims_if_served(namespace))

    def get_pod(self, namespace: str, name: str) -> Obj:
        return self._json(self.core.read_namespaced_pod, name, namespace)

    def pod_log(self, namespace: str, name: str, container: str | None = None) -> str:
        """The container's output so far ('' when the pod has not started or the log is refused)."""
        kw = {"container": container} if container else {}
        try:
            resp = self._call(lambda: self.core.read_namespaced_pod_log(name, namespace, _preload_content=False,
                                                                        **kw))
        except ApiRefused:
            return ""
        return resp.data.decode("utf-8", "replace")

    def create_pod(self, manifest: Obj) -> Obj:
        ns = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self._json(self.core.create_namespaced_pod, ns, with_image(manifest, self.image_override))

    def delete_pod(self, namespace: str, name: str, grace_seconds: int = 0) -> None:
        try:
            self._call(lambda: self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=grace_seconds,
                                                               _preload_content=False))
        except ApiRefused as exc:
            if exc.code != 404:
                raise

    def delete_pods(self, namespace: str = "default", label_selector: str | None = None,
                    grace_seconds: int = 0) -> None:
        """Delete every pod of the namespace (matching the selector); at once with ``grace_seconds`` 0 (a force
        deletion: the API forgets the pods before their node has stopped them and freed their devices)."""
        for pod in self._json(self.core.list_namespaced_pod, namespace,
                              **({"label_selector": label_selector} if label_selector else {}))["items"]:
            self.delete_pod(namespace, pod["metadata"]["name"], grace_seconds)


    # Workloads: a lab creates Jobs and Deployments as a user would, and the controllers make the pods.

    def create_job(self, manifest: Obj) -> Obj:
        ns = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self._json(self.batch.create_namespaced_job, ns, with_image(manifest, self.image_override))

    def create_deployment(self, manifest: Obj) -> Obj:
        ns = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self._json(self.apps.create_namespaced_deployment, ns, with_image(manifest, self.image_override))

    def get_job(self, namespace: str, name: str) -> Obj:
        return self._json(self.batch.read_namespaced_job, name, namespace)

    def get_deployment(self, namespace: str, name: str) -> Obj:
        return self._json(self.apps.read_namespaced_deployment, name, namespace)

    def list_jobs(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        kw = {"label_selector": label_selector} if label_selector else {}
        if namespace:
            return self._json(self.batch.list_namespaced_job, namespace, **kw)["items"]
        return self._json(self.batch.list_job_for_all_namespaces, **kw)["items"]

    def list_deployments(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        kw = {"label_selector": label_selector} if label_selector else {}
        if namespace:
            return self._json(self.apps.list_namespaced_deployment, namespace, **kw)["items"]
        return self._json(self.apps.list_deployment_for_all_namespaces, **kw)["items"]

    def scale_deployment(self, namespace: str, name: str, replicas: int) -> Obj:
        return self._json(self.apps.patch_namespaced_deployment_scale, name, namespace,
                          {"spec": {"replicas": replicas}})

    def set_job_parallelism(self, namespace: str, name: str, parallelism: int) -> Obj:
        """Patch a Job's ``spec.parallelism`` (mutable, as ``kubectl patch job``); the controller adds pods."""
        return self._json(self.batch.patch_namespaced_job, name, namespace, {"spec": {"parallelism": parallelism}})

    # PodGroups (scheduling.k8s.io/v1beta1, served with the GenericWorkload feature gate)

    def create_pod_group(self, manifest: Obj) -> Obj:
        ns = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self._json(self.scheduling.create_namespaced_pod_group, ns, manifest)

    def list_pod_groups_if_served(self, namespace: str | None = "default") -> list[Obj]:
        """The PodGroups, or [] where the API server does not serve them (the gate is off)."""
        try:
            if namespace:
                return self._json(self.scheduling.list_namespaced_pod_group, namespace)["items"]
            return self._json(self.scheduling.list_pod_group_for_all_namespaces)["items"]
        except ApiRefused as exc:
            if exc.code == 404:
                return []
            raise

    def delete_pod_group(self, namespace: str, name: str) -> None:
        self._delete(self.scheduling.delete_namespaced_pod_group, namespace, name)

    def delete_job(self, namespace: str, name: str) -> None:
        """Delete the Job and, in the background, its pods (a Job left alone orphans them, as upstream)."""
        self._delete(self.batch.delete_namespaced_job, namespace, name)

    def delete_deployment(self, namespace: str, name: str) -> None:
        """Delete the Deployment; the garbage collector then removes its ReplicaSets and their pods."""
        self._delete(self.apps.delete_namespaced_deployment, namespace, name)

    def _delete(self, fn: Callable[..., Any], namespace: str, name: str) -> None:
        try:
            self._call(lambda: fn(name, namespace, propagation_policy="Background", _preload_content=False))
        except ApiRefused as exc:
            if exc.code != 404:
                raise


    # Dynamic Resource Allocation (resource.k8s.io/v1): the driver's ResourceSlices, the DeviceClasses, and the
    # claims a lab makes for its pods.

    def list_resource_slices(self, node: str | None = None, driver: str | None = None) -> list[Obj]:
        """The ResourceSlices (of one node / driver: the ``spec.nodeName`` / ``spec.driver`` field selectors),
        by name."""
        fields = [f"spec.nodeName={node}"] if node else []
        fields += [f"spec.driver={driver}"] if driver else []
        kw = {"field_selector": ",".join(fields)} if fields else {}
        items = self._json(self.resource.list_resource_slice, **kw)["items"]
        return sorted(items, key=lambda s: s["metadata"]["name"])

    def list_device_classes(self) -> list[Obj]:
        return self._json(self.resource.list_device_class)["items"]

    def apply_device_classes(self, classes: list[Obj]) -> list[str]:
        """Create each DeviceClass, or replace the one of that name (as ``kubectl apply`` leaves it); their names."""
        names = []
        for dc in classes:
            name = dc["metadata"]["name"]
            try:
                self._json(self.resource.create_device_class, dc)
            except ApiRefused as exc:
                if exc.code != 409:
                    raise
                current = self._json(self.resource.read_device_class, name)
                body = {**dc, "metadata": {**dc["metadata"],
                                           "resourceVersion": current["metadata"]["resourceVersion"]}}
                self._json(self.resource.replace_device_class, name, body)
            names.append(name)
        return names

    def create_claim(self, manifest: Obj) -> Obj:
        ns = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self._json(self.resource.create_namespaced_resource_claim, ns, manifest)

    def create_claim_template(self, manifest: Obj) -> Obj:
        ns = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self._json(self.resource.create_namespaced_resource_claim_template, ns, manifest)

    def get_claim(self, namespace: str, name: str) -> Obj:
        return self._json(self.resource.read_namespaced_resource_claim, name, namespace)

    def list_claims(self, namespace: str | None = "default", label_selector: str | None = None) -> list[Obj]:
        kw = {"label_selector": label_selector} if label_selector else {}
        if namespace:
            return self._json(self.resource.list_namespaced_resource_claim, namespace, **kw)["items"]
        return self._json(self.resource.list_resource_claim_for_all_namespaces, **kw)["items"]

    def list_claims_if_served(self, namespace: str | None = None) -> list[Obj]:
        """The ResourceClaims, or none on a cluster that does not serve ``resource.k8s.io/v1`` (before 1.34)."""
        try:
            return self.list_claims(namespace)
        except ApiRefused as exc:
            if exc.code != 404:
                raise
            return []

    def list_claim_templates(self, namespace: str = "default") -> list[Obj]:
        return self._json(self.resource.list_namespaced_resource_claim_template, namespace)["items"]

    def delete_claim(self, namespace: str, name: str) -> None:
        self._delete(self.resource.delete_namespaced_resource_claim, namespace, name)

    def delete_claim_template(self, namespace: str, name: str) -> None:
        self._delete(self.resource.delete_namespaced_resource_claim_template, namespace, name)

    def pod_claims(self, pod: Obj) -> dict[str, Obj]:
        """The pod's ResourceClaims by its claim name (``spec.resourceClaims[].name``): a named claim, or the one
        the claim controller made from a template (``status.resourceClaimStatuses``); absent while not made yet."""
        ns = pod["metadata"].get("namespace") or "default"
        out: dict[str, Obj] = {}
        for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = claim_name_or_empty(pod, ref)
            if not name:
                continue
            try:
                out[ref["name"]] = self.get_claim(ns, name)
            except ApiRefused as exc:
                if exc.code != 404:
                    raise
        return out


def connect(kubeconfig: str | Path | None = None, *, context: str | None = None,
            up_command: str = DEFAULT_UP_COMMAND) -> ClusterClient:
    """A ``ClusterClient`` for the cluster in ``kubeconfig`` (else ``$MOCKGPU_KUBECONFIG``, else the default).

    A kubeconfig that does not exist raises ClusterGone with the command that makes one.
    """
    from kubernetes import config

    path = kubeconfig or os.environ.get("MOCKGPU_KUBECONFIG") or None
    if path is not None and not Path(path).expanduser().is_file():
        raise ClusterGone(f"no kubeconfig at {path}: the cluster is not running. Bring it back with: {up_command}")
    try:
        api = config.new_client_from_config(config_file=str(Path(path).expanduser()) if path else None,
                                            context=context)
    except (config.ConfigException, OSError, TypeError) as exc:
        raise ClusterGone(f"cannot load a kubeconfig ({exc}). Start a cluster with: {up_command}") from None
    return ClusterClient(api, up_command=up_command)
