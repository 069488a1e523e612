"""The FlowSchemas and PriorityLevelConfigurations kube-apiserver creates at start (API Priority and Fairness'
``exempt`` and ``catch-all`` and the suggested ones; ``apiserver.flowcontrol`` says what they do here): the
objects that are missing are created at each start, as upstream's config-producer does."""

from __future__ import annotations

import copy
import uuid

from mockgpu.control.apiserver import flowcontrol, registry
from mockgpu.control.apiserver.handlers import ResourceAPI, now_rfc3339


def ensure_flowcontrol_objects(api: ResourceAPI) -> None:
    """Create what is missing, stored as upstream serves it (its own objects, valid by construction)."""
    for item in flowcontrol.bootstrap():
        info = registry.by_kind(item["kind"])
        assert info is not None, item["kind"]
        if api.store.get(info.plural, "", item["metadata"]["name"]) is None:
            obj = copy.deepcopy(item)
            obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
            api.store.create(info.plural, obj)
