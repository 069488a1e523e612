"""The record of one served kind: what discovery advertises and every rule the server applies to its objects.

One record per kind, as kube-apiserver keeps one ``pkg/registry/<group>/<kind>/strategy.go`` (and its REST
storage) per kind: the resource's names, scope, verbs and subresources (``metav1.APIResource``), the strategy
(defaults and ``PrepareForCreate``/``PrepareForUpdate``, ``Validate``/``ValidateUpdate``, the admission check a
strategy makes against the namespace), the status and scale subresources, garbage-collection and delete rules,
the printer (``pkg/printers/internalversion``), the field labels for field selectors (``GetAttrs``/
``toSelectableFields``) and the schema source (the official client's model); the protobuf message is the
kind's own in k8s.io/api (``protobuf``). The server modules look records up (``registry``); none keeps its
own per-kind table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import names
from mockgpu.control.apiserver.printers import Printer
from mockgpu.control.apiserver.status import FieldError

Obj = dict[str, Any]

ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS = ("get", "patch", "update")

FieldLabels = Mapping[str, Callable[[Obj], str]]


@dataclass(frozen=True)
class Subresource:
    """``pods/status`` style entry: its kind and verbs, and the group/version of a foreign kind."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


def field_path(*keys: str) -> Callable[[Obj], str]:
    """A field label's value: the string at ``keys`` ("" when absent, booleans as Go prints them)."""
    def get(obj: Obj) -> str:
        cur: Any = obj
        for k in keys:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return "" if cur is None else str(cur)
    return get


#: the field labels every kind supports (``DefaultClusterScopedAttr``/``DefaultNamespaceScopedAttr``)
META_FIELDS: FieldLabels = {"metadata.name": field_path("metadata", "name"),
                            "metadata.namespace": field_path("metadata", "namespace")}
CLUSTER_FIELDS: FieldLabels = {"metadata.name": META_FIELDS["metadata.name"]}


def on_every_write(validate: Callable[[Obj], list[FieldError]]) -> Callable[[Obj, Obj | None], list[FieldError]]:
    """A validation that checks the object alone, on create and on update alike."""
    def check(obj: Obj, old: Obj | None) -> list[FieldError]:
        return validate(obj)
    return check


@dataclass(frozen=True)
class View:
    """A kind served as another group's conversion of objects stored under a kind of its own (events.k8s.io/v1
    Events over the core/v1 Event storage): the conversions and the checks this group's strategy adds."""

    from_stored: Callable[[Obj], Obj]
    to_stored: Callable[[Obj], Obj]
    validate_create: Callable[[Obj], list[FieldError]]
    validate_update: Callable[[Obj, Obj], list[FieldError]]
    field_selector: Callable[[str], str]  # this group's field labels → the stored kind's


@dataclass(frozen=True)
class Lifecycle:
    """What a kind's storage does around create and delete beyond the generic store (upstream: the Namespace
    storage, the NamespaceLifecycle admission plugin and kube-controller-manager's namespace controllers).
    ``api`` is the server's verbs (``handlers.ResourceAPI``)."""

    immortal: tuple[str, ...] = ()  # names that may not be deleted (403)
    created: Callable[[Any, str], None] | None = None  # (api, name): after the object is stored
    # two-phase deletion (the Namespace storage's Delete): the first DELETE only marks the object (obj, now,
    # propagation policy) -> the marked object; it goes once ``held`` says its own finalizers are done
    terminating: Callable[[Obj, str, str | None], Obj] | None = None
    held: Callable[[Obj], bool] | None = None


@dataclass(frozen=True)
class Kind:
    """One served kind (see the module docstring); the hooks are None where the kind has no such rule."""

    plural: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ALL
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    connect: tuple[str, ...] = ()  # connect subresources (streams: GET/POST only; not listed by discovery here)
    group: str = ""
    version: str = "v1"
    # storage: False for what is never kept under the plural (bindings, the self-reviews)
    stored: bool = True
    view: View | None = None
    route_to: tuple[str, str] | None = None  # (plural, subresource): another URL for that subresource's action
    # served only with this feature gate on (storage_<group>.go installs the kind only then)
    feature_gate: str | None = None
    # the strategy
    name_rule: Callable[[str, bool], list[str]] = names.name_is_dns_subdomain
    prepare: Callable[[Obj, Obj | None, str], Obj] | None = None  # (obj, old, subresource): defaults, Prepare*
    # the v1 defaults alone (SetDefaults_*), when ``prepare`` also admits on create (ServiceAccount, tolerations):
    # what the field manager records a create's writer as owning (upstream runs it before admission)
    defaults: Callable[[Obj], Obj] | None = None
    # (obj, old, gates): the fields of feature gates, dropped when their gate is off (dropDisabled*Fields), or
    # defaulted when it is on; before ``prepare``
    gated_fields: Callable[[Obj, Obj | None, FeatureGates], None] | None = None
    validate: Callable[[Obj, Obj | None], list[FieldError]] | None = None  # (obj, old), after ObjectMeta's
    validate_status: Callable[[Obj, Obj], list[FieldError]] | None = None  # /status updates, when they differ
    # other subresources whose updates have rules of their own (namespaces/finalize): name -> (obj, old)
    validate_subresource: Mapping[str, Callable[[Obj, Obj], list[FieldError]]] = field(default_factory=dict)
    admission: Callable[[Obj, dict[str, str]], list[FieldError]] | None = None  # create: the namespace's labels
    # the storage's BeginCreate/BeginUpdate: (stored objects, obj, old) -> errors; fills in what it allocates (the
    # Services' cluster IPs and node ports), after the defaults and before the strategy's validation
    allocate: Callable[[Any, Obj, Obj | None], list[FieldError]] | None = None
    limit_ranged: bool = False  # the LimitRanger admission plugin defaults and checks it (pods)
    quantities: Callable[[Obj], list[dict[str, Any]]] | None = None  # maps whose values are stored canonical
    micro_times: tuple[tuple[str, ...], ...] = ()  # paths of metav1.MicroTime fields (re-encoded in UTC)
    review: Callable[[Any, Any, Any], Obj] | None = None  # (body, user, objects): answered, never stored
    # deletion
    # the pod selector as a metav1.LabelSelector, where ``spec.selector`` is not one (ReplicationControllers' map)
    label_selector: Callable[[Obj], Any] | None = None
    gc_policy: str | None = None  # default propagation of an owner kind (the garbage collector's)
    returns_deleted: bool = False  # DELETE answers with the object, not a Status (ReturnDeletedObject)
    grace_period: Callable[[Obj, int | None], int] | None = None  # (obj, requested): graceful deletion
    lifecycle: Lifecycle | None = None
    # reading
    printer: Printer | None = None
    table_order: Callable[[Obj], Any] | None = None  # a sort key of the list printer's rows (printFlowSchemaList)
    field_labels: FieldLabels = field(default_factory=lambda: META_FIELDS)
    model: str | None = None  # the official client's model: OpenAPI schema, kubectl explain, decoding

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    def has(self, subresource: str) -> bool:
        """Whether ``<plural>/<subresource>`` is served (``status``: status kept apart from the main resource)."""
        return any(s.name == subresource for s in self.subresources)
