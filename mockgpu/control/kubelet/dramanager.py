"""The kubelet's DRA manager: registered DRA drivers, and preparing a pod's ResourceClaims through them before
its containers start, following ``pkg/kubelet/cm/dra`` (v1.37).

* ``validate_plugin`` / ``register_plugin`` / ``deregister_plugin``: the ``DRAPlugin`` handler of the plugin
  watcher. A driver must offer a service the kubelet speaks (``v1.DRAPlugin``); the kubelet dials its endpoint.
* ``prepare(pod)``: for each entry of ``pod.spec.resourceClaims`` the claim's name (``resourceClaimName``, or for
  a template the name recorded in ``pod.status.resourceClaimStatuses``), the claim fetched through the API,
  checked to be owned by the pod (template claims), reserved for the pod (``status.reservedFor``) and
  allocated; then ``NodePrepareResources`` per driver for the claims not yet prepared, and the returned devices
  and CDI device IDs kept per claim. Any problem raises ``DRAError`` with upstream's message
  (``prepare dynamic resources: ...``); the pod worker reports it as a ``FailedPrepareDynamicResources``
  event and tries again, so a pod waits until its claims are allocated and reserved, as upstream's does.
* ``container_edits(pod, container)``: the CDI devices of the claims (and requests) the container names in
  ``resources.claims``, resolved in the node's CDI directory: their ``containerEdits`` env and bind mounts.
* ``unprepare(pod)``: ``NodeUnprepareResources`` for the pod's claims that no other pod on the node uses.

Simplified: no checkpoint of prepared claims (a restarted kubelet prepares again: the driver is idempotent);
no DRAResourceHealth; one gRPC call per driver per pod. Where several CDI devices of one container set
``NVIDIA_VISIBLE_DEVICES``, their values are joined (NVIDIA's own CDI specs add device nodes instead, which a
fake GPU does not have); other variables follow CDI's rule, the later edit wins.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from mockgpu.control.kubelet.container import Mount
from mockgpu.control.kubelet.endpoint import go_rpc_error
from mockgpu.dra.api import dra_v1_pb2 as dpb
from mockgpu.dra.api import dra_v1_pb2_grpc as dpb_grpc
from mockgpu.dra.prepare import VISIBLE_DEVICES
from mockgpu.sched.dra.claimname import ClaimNameError
from mockgpu.sched.dra.claimname import claim_name as resourceclaim_name

log = logging.getLogger(__name__)
SERVICES_SUPPORTED_BY_KUBELET = ["v1.DRAPlugin"]
CALL_TIMEOUT = 45.0  # upstream's default plugin client timeout


class DRAError(Exception):
    """Preparing or unpreparing failed; the message is upstream's."""


@dataclass
class PreparedDevice:
    driver: str
    request_names: list[str]
    pool: str
    device: str
    cdi_ids: list[str]


@dataclass
class ClaimInfo:
    uid: str
    name: str
    namespace: str
    drivers: list[str]
    pod_uids: set[str] = field(default_factory=set)
    devices: list[PreparedDevice] = field(default_factory=list)
    prepared: bool = False

    def cdi_ids(self, request: str) -> list[str]:
        """The CDI device IDs for a container naming this claim with ``request`` ("" = the whole claim)."""
        out: list[str] = []
        for d in self.devices:
            if not request or not d.request_names or any(r == request or r.split("/", 1)[0] == request
                                                         for r in d.request_names):
                out.extend(i for i in d.cdi_ids if i not in out)
        return out


def claim_name(pod: dict[str, Any], pod_claim: dict[str, Any]) -> tuple[str | None, bool]:
    """resourceclaim.Name (``sched.dra.claimname``): (claim name or None, must check the owner). Raises DRAError."""
    try:
        return resourceclaim_name(pod, pod_claim)
    except ClaimNameError as exc:
        raise DRAError(str(exc)) from None


def _owned_by(claim: dict[str, Any], pod: dict[str, Any]) -> bool:
    uid = pod["metadata"]["uid"]
    return any(o.get("uid") == uid and o.get("controller") for o in claim["metadata"].get("ownerReferences") or [])


def _reserved_for(claim: dict[str, Any], pod: dict[str, Any]) -> bool:
    uid = pod["metadata"]["uid"]
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])


class DRAManager:
    def __init__(self, cdi_dir: Path, get_claim: Callable[[str, str], dict[str, Any]] | None = None) -> None:
        """``get_claim(namespace, name)``: the ResourceClaim as a dict; raises with the API's message."""
        self.cdi_dir = Path(cdi_dir)
        self.get_claim = get_claim
        self._lock = threading.RLock()
        self.plugins: dict[str, tuple[str, grpc.Channel, dpb_grpc.DRAPluginStub]] = {}
        self.claims: dict[tuple[str, str], ClaimInfo] = {}  # (namespace, name) -> info

    # -- the plugin watcher's handler --------------------------------------------------------------
    def validate_plugin(self, name: str, endpoint: str, versions: list[str]) -> None:
        prefix = f"invalid supported gRPC versions of DRA driver plugin {name} at endpoint {endpoint}: "
        if not versions:
            raise DRAError(prefix + "empty list of supported gRPC services (aka supported versions)")
        if not any(v in SERVICES_SUPPORTED_BY_KUBELET for v in versions):
            raise DRAError(prefix + f"none of services supported by the plugin ({_go_quote(versions)}) "
                                    f"are supported by the kubelet ({_go_quote(SERVICES_SUPPORTED_BY_KUBELET)})")

    def register_plugin(self, name: str, endpoint: str, versions: list[str]) -> None:
        ch = grpc.insecure_channel(f"unix://{endpoint}")
        with self._lock:
            old = self.plugins.get(name)
            self.plugins[name] = (endpoint, ch, dpb_grpc.DRAPluginStub(ch))
        if old is not None:
            old[1].close()
        log.info("DRA driver %s registered at %s", name, endpoint)

    def deregister_plugin(self, name: str, endpoint: str) -> None:
        with self._lock:
            cur = self.plugins.get(name)
            if cur is None or cur[0] != endpoint:
                return
            del self.plugins[name]
        cur[1].close()

    def registered(self) -> list[str]:
        with self._lock:
            return sorted(self.plugins)

    def _stub(self, driver: str) -> dpb_grpc.DRAPluginStub:
        with self._lock:
            if not driver:
                raise DRAError("DRA driver name is empty")
            if driver not in self.plugins:
                raise DRAError(f"DRA driver {driver} is not registered")
            return self.plugins[driver][2]

    def stop(self) -> None:
        with self._lock:
            plugins, self.plugins = self.plugins, {}
        for _, ch, _ in plugins.values():
            ch.close()

    # -- pods ----------------------------------------------------------------------------------------
    @staticmethod
    def has_claims(pod: dict[str, Any]) -> bool:
        return bool((pod.get("spec") or {}).get("resourceClaims"))

    def prepare(self, pod: dict[str, Any]) -> None:
        try:
            self._prepare(pod)
        except DRAError as exc:
            raise DRAError(f"prepare dynamic resources: {exc}") from None

    def _prepare(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        ns, uid = meta.get("namespace", "default"), meta["uid"]
        found: list[dict[str, Any]] = []
        for pc in pod["spec"].get("resourceClaims") or []:  # validation pass: nothing changes on failure
            name, check_owner = claim_name(pod, pc)
            if name is None:
                continue
            try:
                claim = self.get_claim(ns, name)  # type: ignore[misc]
            except Exception as exc:
                raise DRAError(f"fetch ResourceClaim {name}: {exc}") from None
            if check_owner and not _owned_by(claim, pod):
                raise DRAError(f"ResourceClaim {ns}/{name} was not created for Pod {ns}/{meta['name']} "
                               "(Pod is not owner)")
            if not _reserved_for(claim, pod):
                raise DRAError(f"pod {meta['name']} ({uid}) is not allowed to use ResourceClaim {name} "
                               f"({claim['metadata'].get('uid')})")
            alloc = (claim.get("status") or {}).get("allocation")
            if not alloc:
                raise DRAError(f"ResourceClaim {name}: not allocated")
            results = (alloc.get("devices") or {}).get("results") or []
            for drv in dict.fromkeys(r.get("driver", "") for r in results):
                self._stub(drv)
            found.append(claim)
        batches: dict[str, list[ClaimInfo]] = {}
        with self._lock:
            for claim in found:
                cm = claim["metadata"]
                key = (ns, cm["name"])
                info = self.claims.get(key)
                if info is None:
                    drivers = list(dict.fromkeys(r.get("driver", "") for r in
                                                 claim["status"]["allocation"]["devices"].get("results") or []))
                    info = self.claims[key] = ClaimInfo(cm["uid"], cm["name"], ns, drivers)
                elif info.uid != cm["uid"]:
                    raise DRAError(f"old ResourceClaim with same name {cm['name']} and different UID {info.uid} "
                                   "still exists (previous pod force-deleted?!)")
                info.pod_uids.add(uid)
                if info.prepared:
                    continue
                for drv in info.drivers:
                    batches.setdefault(drv, []).append(info)
        for drv, infos in batches.items():
            for info, result in self._call(drv, "NodePrepareResources", infos):
                with self._lock:
                    info.devices = [d for d in info.devices if d.driver != drv] + [
                        PreparedDevice(drv, list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids))
                        for d in result.devices]
        with self._lock:
            for infos in batches.values():
                for info in infos:
                    info.prepared = True

    def _pod_claim_infos(self, pod: dict[str, Any]) -> dict[str, ClaimInfo]:
        """Pod claim entry name -> the prepared claim's info (entries without one are left out)."""
        ns = pod["metadata"].get("namespace", "default")
        out: dict[str, ClaimInfo] = {}
        for pc in pod["spec"].get("resourceClaims") or []:
            try:
                name, _ = claim_name(pod, pc)
            except DRAError:
                continue
            with self._lock:
                info = self.claims.get((ns, name)) if name else None
            if info is not None and info.prepared:
                out[pc["name"]] = info
        return out

    def container_cdi_ids(self, pod: dict[str, Any], container: dict[str, Any]) -> list[str]:
        infos = self._pod_claim_infos(pod)
        out: list[str] = []
        for ref in (container.get("resources") or {}).get("claims") or []:
            info = infos.get(ref["name"])
            if info is not None:
                out.extend(i for i in info.cdi_ids(ref.get("request") or "") if i not in out)
        return out

    def container_env(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        """The env the container's CDI devices add. Raises DRAError naming unresolvable CDI devices."""
        return self.container_edits(pod, container)[0]

    def container_edits(self, pod: dict[str, Any], container: dict[str, Any]) -> tuple[dict[str, str], list[Mount]]:
        """The env and bind mounts the container's CDI devices add (the spec's common edits, then the device's).
        Raises DRAError naming unresolvable CDI devices, as a runtime refuses such a container."""
        ids = self.container_cdi_ids(pod, container)
        if not ids:
            return {}, []
        specs = _read_cdi_specs(self.cdi_dir)
        env: dict[str, str] = {}
        mounts: dict[str, Mount] = {}
        missing = []
        for cdi_id in ids:
            kind, _, name = cdi_id.partition("=")
            found = specs.get((kind, name))
            if found is None:
                missing.append(cdi_id)
                continue
            for edits in found:
                for item in edits.get("env") or []:
                    k, _, v = item.partition("=")
                    if k == VISIBLE_DEVICES and env.get(k):
                        v = ",".join(dict.fromkeys([*env[k].split(","), *v.split(",")]))
                    env[k] = v
                for m in edits.get("mounts") or []:
                    mounts[m["containerPath"]] = Mount(m["containerPath"], m["hostPath"],
                                                       read_only="ro" in (m.get("options") or []))
        if missing:
            raise DRAError(f"failed to inject CDI devices: unresolvable CDI devices {', '.join(missing)}")
        return env, list(mounts.values())

    def container_devices(self, pod: dict[str, Any], container: dict[str, Any]) -> list[tuple[str, PreparedDevice]]:
        """(claim name, device) for the prepared devices a container gets (its claims and requests)."""
        infos = self._pod_claim_infos(pod)
        out: list[tuple[str, PreparedDevice]] = []
        for ref in (container.get("resources") or {}).get("claims") or []:
            info = infos.get(ref["name"])
            if info is None:
                continue
            req = ref.get("request") or ""
            for d in info.devices:
                if (not req or not d.request_names or any(r == req or r.split("/", 1)[0] == req
                                                          for r in d.request_names)) \
                        and (info.name, d) not in out:
                    out.append((info.name, d))
        return out

    def unprepare(self, pod: dict[str, Any]) -> None:
        """NodeUnprepareResources for the pod's claims no other pod uses; DRAError with upstream's message."""
        uid = pod["metadata"]["uid"]
        batches: dict[str, list[ClaimInfo]] = {}
        with self._lock:
            for info in list(self.claims.values()):
                if uid not in info.pod_uids:
                    continue
                if len(info.pod_uids) > 1:
                    info.pod_uids.discard(uid)
                    continue
                # a claim whose prepare never succeeded is unprepared only through a driver that is still there
                drivers = [d for d in info.drivers if info.prepared or d in self.plugins]
                for drv in drivers:
                    batches.setdefault(drv, []).append(info)
                if not drivers:
                    self.claims.pop((info.namespace, info.name), None)
        try:
            for drv, infos in batches.items():
                self._call(drv, "NodeUnprepareResources", infos)
                with self._lock:
                    for info in infos:
                        self.claims.pop((info.namespace, info.name), None)
        except DRAError as exc:
            raise DRAError(f"unprepare dynamic resources: {exc}") from None

    def _call(self, drv: str, method: str, infos: list[ClaimInfo]) -> list[tuple[ClaimInfo, Any]]:
        """One ``NodePrepareResources``/``NodeUnprepareResources`` call for ``infos`` on driver ``drv``; each
        claim with its result, DRAError (upstream's wording) for a failed call, a claim's error, an unknown UID
        or a claim the driver skipped."""
        req = getattr(dpb, f"{method}Request")(claims=[dpb.Claim(namespace=i.namespace, uid=i.uid, name=i.name)
                                                       for i in infos])
        try:
            resp = getattr(self._stub(drv), method)(req, timeout=CALL_TIMEOUT)
        except grpc.RpcError as exc:
            raise DRAError(f"{method}: {go_rpc_error(exc)}") from None
        by_uid = {i.uid: i for i in infos}
        out = []
        for claim_uid, result in resp.claims.items():
            info = by_uid.get(claim_uid)
            if info is None:
                raise DRAError(f"{method} returned result for unknown claim UID {claim_uid}")
            if result.error:
                raise DRAError(f"{method} failed for ResourceClaim {info.name}: {result.error}")
            out.append((info, result))
        if len(resp.claims) != len(infos):
            raise DRAError(f"{method} skipped {len(infos) - len(resp.claims)} ResourceClaims")
        return out


def _go_quote(items: list[str]) -> str:
    return "[" + " ".join(f'"{i}"' for i in items) + "]"


def _read_cdi_specs(cdi_dir: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(kind, device name) -> its container edits (the spec's common ones, then the device's) for every CDI spec
    in the dir."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in sorted(cdi_dir.glob("*.json")) if cdi_dir.is_dir() else []:
        try:
            spec = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            log.warning("CDI spec %s not readable: %s", path, exc)
            continue
        common = spec.get("containerEdits") or {}
        for dev in spec.get("devices") or []:
            out[spec.get("kind", ""), dev.get("name", "")] = [common, dev.get("containerEdits") or {}]
    return out
