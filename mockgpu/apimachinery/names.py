"""Names and their rules as apimachinery validates them (``k8s.io/apimachinery/pkg/util/validation``:
``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsQualifiedName``, ``IsValidLabelValue``, ``IsConfigMapKey``; the
``path`` and ``generateName`` rules of ``pkg/api/validation``), and upstream's resource-name classes
(``pkg/apis/core/v1/helper/helpers.go``: ``IsNativeResource``, ``IsExtendedResourceName``).

Each check returns upstream's messages ([] when the value is fine), so a bad name reads the same here as on a
real cluster. The one home of these rules: the API server, the kubelet's device manager, the scheduler's
config and ``sched`` and the cluster spec all call them.
"""

from __future__ import annotations

import random
import re

#: upstream's ``utilrand`` alphabet: no vowels (no accidental words) and no confusable 0/1/3.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - GENERATED_SUFFIX_LENGTH

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
              "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                  "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                  "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def generate_name(prefix: str, rng: random.Random | None = None) -> str:
    """``metadata.generateName`` → name: the prefix (cut to 58 chars, as upstream) plus 5 random characters."""
    rng = rng or random.Random()
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH]
    return prefix + "".join(rng.choice(NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LENGTH))


def dns1123_label(value: str) -> list[str]:
    """Problems with ``value`` as a DNS-1123 label (namespace names, container names); [] if fine. As apimachinery
    v0.37's ``content.IsDNS1123Label``, a valid subdomain that is no label (it has dots) is "must not contain dots"."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL_RE.match(value):
        errs.append("must not contain dots" if _DNS1123_SUBDOMAIN_RE.match(value) else _LABEL_MSG)
    return errs


def port_name(value: str) -> list[str]:
    """Problems with ``value`` as a port name (IANA_SVC_NAME: ``IsValidPortName``); [] if fine."""
    errs = []
    if len(value) > 15:
        errs.append(_max_len(15))
    if not re.fullmatch(r"[-a-z0-9]+", value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as a DNS-1123 subdomain (pod, node, configmap names); [] if fine."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_SUBDOMAIN_MSG)
    return errs


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    """upstream ``NameIsDNSLabel``: a generateName prefix may end in '-' (checked as if followed by 'a')."""
    return dns1123_label(_mask_prefix(name) if prefix else name)


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return dns1123_subdomain(_mask_prefix(name) if prefix else name)


def _mask_prefix(name: str) -> str:
    """upstream ``maskTrailingDash``: a generateName prefix ending in '-' is checked with its last two characters
    replaced by 'a' (so "a-" passes); any other prefix is checked as it is ("a." does not pass)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def path_segment_name(name: str, prefix: bool) -> list[str]:
    """upstream ``ValidatePathSegmentName`` (Events, Bindings): only '.', '..', '/' and '%' are refused."""
    errs = []
    if not prefix and name in (".", ".."):
        errs.append(f"may not be '{name}'")
    for bad in ("/", "%"):
        if bad in name:
            errs.append(f"may not contain '{bad}'")
    return errs


def qualified_name(value: str) -> list[str]:
    """upstream ``IsQualifiedName``: label and annotation keys, ``[prefix/]name``. In apimachinery v0.37 it is an
    alias of ``content.IsLabelKey``: more than one ``/`` is "a valid label key ...", and an empty name part gets
    both "must be non-empty" and the format error."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs = ["prefix part must be non-empty"]
        else:
            errs = [f"prefix part {m}" for m in dns1123_subdomain(prefix)]
    else:
        return ["a valid label key " + _QUALIFIED_MSG[len("name part "):] +
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + _max_len(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append(_QUALIFIED_MSG)
    return errs


def label_value(value: str) -> list[str]:
    """upstream ``IsValidLabelValue``."""
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(_max_len(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_LABEL_VALUE_MSG)
    return errs


_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")


def configmap_key(key: str) -> list[str]:
    """upstream ``IsConfigMapKey``."""
    errs = []
    if len(key) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX))
    if not _CONFIG_KEY_RE.match(key):
        errs.append("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                    "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
    if key in (".", ".."):
        errs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


# ---- resource names (pkg/apis/core/v1/helper/helpers.go) ----------------------------------------------------

DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"  # v1.ResourceDefaultNamespacePrefix
REQUESTS_PREFIX = "requests."  # v1.DefaultResourceRequestsPrefix


def is_native_resource_name(name: str) -> bool:
    """upstream ``IsNativeResource``: no domain prefix, or one in ``kubernetes.io/`` (``cpu``, ``memory``)."""
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


def is_extended_resource_name(name: str) -> bool:
    """upstream ``IsExtendedResourceName``: not native, no ``requests.`` prefix, and ``requests.<name>`` is a
    qualified name (what a ResourceQuota would call it), e.g. ``nvidia.com/gpu``."""
    if is_native_resource_name(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return not qualified_name(REQUESTS_PREFIX + name)
