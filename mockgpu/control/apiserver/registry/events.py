"""events.k8s.io/v1: Events, a second view of the core/v1 Event storage (``pkg/registry/core/event`` serves both
groups upstream; the conversion and this group's create/update checks are ``apiserver.eventsv1``)."""

from __future__ import annotations

from mockgpu.control.apiserver import eventsv1, printers
from mockgpu.control.apiserver.registry.core import EVENT_FIELDS
from mockgpu.control.apiserver.registry.kind import Kind, View

GROUP_VERSION = "events.k8s.io/v1"
SCHEME_KINDS: frozenset[str] = frozenset()

EVENT = Kind("events", "event", "Event", True, short_names=("ev",), group="events.k8s.io",
             view=View(from_stored=eventsv1.from_core, to_stored=eventsv1.to_core,
                       validate_create=eventsv1.validate_create, validate_update=eventsv1.validate_update,
                       field_selector=eventsv1.translate_field_selector),
             printer=printers.EVENT, field_labels=EVENT_FIELDS, model="EventsV1Event")

KINDS = (EVENT,)
