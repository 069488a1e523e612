"""The device manager's checkpoint, ``kubelet_internal_checkpoint``, in the kubelet's JSON layout.

``{"Data": {"PodDeviceEntries": [{"PodUID", "ContainerName", "ResourceName",
"DeviceIDs": {"<numa>": [ids]}, "AllocResp": "<base64 protobuf ContainerAllocateResponse>"}],
"RegisteredDevices": {"<resource>": [healthy ids]}}, "Checksum": <uint32>}``.
Devices without topology are filed under NUMA ``"-1"``.

Simplification: upstream's checksum is FNV-32a over a Go ``spew`` dump of ``Data``, which cannot
be reproduced outside Go; here it is FNV-32a over the canonical JSON of ``Data``. A file whose
checksum does not match is reported as corrupted and ignored, as the kubelet does (it logs and
continues with empty state).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path

from mockgpu.privatefs import write_private

CHECKPOINT_NAME = "kubelet_internal_checkpoint"
NO_NUMA = "-1"


class CorruptCheckpointError(Exception):
    pass


@dataclass
class PodDeviceEntry:
    pod_uid: str
    container: str
    resource: str
    device_ids: dict[str, list[str]]  # NUMA node (as a string) -> IDs
    alloc_resp: bytes  # serialized v1beta1.ContainerAllocateResponse

    def all_ids(self) -> list[str]:
        return sorted({i for ids in self.device_ids.values() for i in ids})


@dataclass
class CheckpointData:
    entries: list[PodDeviceEntry] = field(default_factory=list)
    registered: dict[str, list[str]] = field(default_factory=dict)


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _data_json(data: CheckpointData) -> dict:
    entries = [
        {
            "PodUID": e.pod_uid,
            "ContainerName": e.container,
            "ResourceName": e.resource,
            "DeviceIDs": e.device_ids,
            "AllocResp": base64.b64encode(e.alloc_resp).decode(),
        }
        for e in data.entries
    ]
    return {"PodDeviceEntries": entries or None, "RegisteredDevices": data.registered}


def _checksum(data_json: dict) -> int:
    return fnv32a(json.dumps(data_json, sort_keys=True, separators=(",", ":")).encode())


def write_checkpoint(path: Path, data: CheckpointData) -> None:
    """Write atomically (temp file + rename), as the kubelet's checkpoint manager does."""
    body = _data_json(data)
    write_private(path, json.dumps({"Data": body, "Checksum": _checksum(body)}))


def read_checkpoint(path: Path) -> CheckpointData | None:
    """The checkpoint, or None when there is none; CorruptCheckpointError when unreadable."""
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        body = doc["Data"]
        if _checksum(body) != doc["Checksum"]:
            raise CorruptCheckpointError("checkpoint is corrupted")
        entries = [
            PodDeviceEntry(
                pod_uid=e["PodUID"],
                container=e["ContainerName"],
                resource=e["ResourceName"],
                device_ids={str(k): list(v) for k, v in e["DeviceIDs"].items()},
                alloc_resp=base64.b64decode(e["AllocResp"]),
            )
            for e in body.get("PodDeviceEntries") or []
        ]
        registered = {k: list(v) for k, v in (body.get("RegisteredDevices") or {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptCheckpointError(f"checkpoint is corrupted: {exc}") from exc
    return CheckpointData(entries, registered)
