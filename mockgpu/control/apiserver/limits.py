"""The API server's bounds on hostile input, each as upstream sets it (one home for all of them).

- Request bodies: at most ``MAX_BODY_BYTES`` (kube-apiserver ``--max-request-body-bytes``, default 3 MiB,
  ``k8s.io/apiserver/pkg/server/config.go``; 413 "Request entity too large: limit is 3145728" from
  ``handlers/rest.go`` ``limitedReadBody``), for every verb and content type; a YAML body's JSON form too.
- Nesting: JSON at most ``MAX_DEPTH`` (10000) deep, as Go's and ``sigs.k8s.io/json``'s scanners
  (``maxNestingDepth``) and ``k8s.io/apimachinery/pkg/util/json`` (``maxDepth``); deeper is a 400. Python
  recursion is given room for that depth (:func:`ensure_recursion_headroom`), so deep but allowed input is
  handled like any other instead of ending in ``RecursionError``.
- YAML: aliases are counted as goyaml (``go.yaml.in/yaml/v2`` ``decode.go``, which ``sigs.k8s.io/yaml``
  uses) counts them: once more than 100 of at least 1000 decode steps came from alias expansion and their share
  exceeds :func:`allowed_alias_ratio`, the document is refused with "yaml: document contains excessive
  aliasing" before anything is expanded. Two bounds of our own: a YAML body may expand to at most
  ``MAX_YAML_EXPANDED_BYTES`` of JSON (upstream has no such bound: a long string named 99 times passes goyaml's
  rule; we answer 413 rather than build hundreds of MB). Nesting: libyaml's own limit (1000 by default) is
  raised to ``MAX_DEPTH`` (``yaml_set_max_nest_level``, which PyYAML's bundled libyaml exports), so a YAML body
  may nest as deep as a JSON one, as upstream's YAML bodies become JSON and meet the same bound.
- JSON patches: at most ``MAX_JSON_PATCH_OPS`` operations (413, ``handlers/patch.go``
  ``maxJSONPatchOperations``) and at most ``JSON_PATCH_MAX_COPY_BYTES`` copied by ``copy`` operations
  (``--json-patch-max-copy-bytes`` → ``jsonpatch.AccumulatedCopySizeLimit``, 422).
- Request heads: Go's net/http reads up to 1 MiB of request line and headers together (``DefaultMaxHeaderBytes``;
  431 beyond) and kube-apiserver keeps that default. aiohttp bounds each line, not their sum, so the embedded
  server takes lines of up to ``HTTP_PARSER_LIMITS`` (32 KiB) and 256 of them: what clients send (long label
  selectors, a few hundred headers) is read as upstream reads it, a single header past 32 KiB is a 400 where
  upstream reads it (or answers 431 past 1 MiB), and one request head costs at most 8 MiB.
- Stored objects: at most ``MAX_OBJECT_BYTES`` encoded (etcd's default ``--max-request-bytes``, 1.5 MiB). etcd
  refuses a larger write with "etcdserver: request is too large" (and past 2 MiB kube-apiserver's etcd client
  refuses to send it), which kube-apiserver does not convert: the client gets a 500 whose reason is empty
  (``responsewriters.ErrorToAPIStatus``; checked against v1.37.2). Simplified: the object's JSON is measured,
  where etcd measures the protobuf-encoded request (a little smaller for most kinds).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from mockgpu.control.apiserver import status as st

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 10000
MAX_JSON_PATCH_OPS = 10000
JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024
MAX_OBJECT_BYTES = 1536 * 1024
ETCD_CLIENT_MAX_SEND_BYTES = 2 * 1024 * 1024  # kube-apiserver's etcd client: grpc MaxCallSendMsgSize
MAX_YAML_EXPANDED_BYTES = 32 * 1024 * 1024
#: aiohttp's request-head bounds (its defaults: 8190-byte lines, 128 headers); see the module's docstring
HTTP_PARSER_LIMITS = {"max_line_size": 32 * 1024, "max_field_size": 32 * 1024, "max_headers": 256}
#: bodies smaller than this are decoded on the event loop (a thread hop costs more than decoding them)
INLINE_DECODE_BYTES = 64 * 1024

# goyaml v2 decode.go: alias_ratio_range_low / _high
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000
_RECURSION_LIMIT = 4 * MAX_DEPTH + 1000

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _raise_libyaml_nesting() -> None:
    """libyaml refuses documents nested deeper than 1000 ("exceeded maximum nesting depth"); allow ``MAX_DEPTH``
    as the JSON path does. libyaml's parser keeps its states on a heap stack; PyYAML's composer recurses once
    per level (checked here on a worker thread's default 8 MiB stack at 10000 levels)."""
    if _SafeLoader is yaml.SafeLoader:
        return  # the pure-Python parser has no such limit of its own; the JSON bound applies after
    try:
        lib = ctypes.CDLL(yaml._yaml.__file__)  # type: ignore[attr-defined]
        lib.yaml_set_max_nest_level(MAX_DEPTH)
    except (OSError, AttributeError):
        pass  # an older libyaml (< 0.2.5) without the setting: its 1000 stays


_raise_libyaml_nesting()


class _Loader(_SafeLoader):  # type: ignore[misc,valid-type]
    """The safe loader, with goyaml's reading of tags it does not know (``resolve.go``: an unresolvable tag
    leaves the node as it is written): ``!!python/name:os.system NAME`` is the string ``NAME``, not an error."""


def _untagged(loader: yaml.SafeLoader, _suffix: str, node: Node) -> Any:
    if isinstance(node, MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


def _binary(loader: yaml.SafeLoader, node: Node) -> str:
    """``!!binary``: goyaml decodes the base64 into a Go string, which JSON encodes as text (invalid UTF-8 as
    U+FFFD)."""
    return loader.construct_yaml_binary(node).decode("utf-8", "replace")  # type: ignore[arg-type]


_Loader.add_multi_constructor("", _untagged)
_Loader.add_constructor("tag:yaml.org,2002:binary", _binary)
# goyaml v2 (go.yaml.in/yaml/v2 resolve.go, what sigs.k8s.io/yaml reads with) takes y, Y, n and N as booleans too,
# which PyYAML's YAML 1.1 resolver leaves as strings: `matchLabels: {app: y}` is a bool there (a 400 upstream)
_Loader.bool_values = {**_SafeLoader.bool_values, "y": True, "n": False}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


def ensure_recursion_headroom() -> None:
    """Let Python recurse as deep as allowed input nests (deepcopy, merging and encoding recurse per level).

    Input deeper than ``MAX_DEPTH`` is refused before anything recurses over it; Python calls do not use the C
    stack (3.11), and the C recursion of ``json`` stays within ``MAX_DEPTH`` levels. Called when the server
    starts and before each body is decoded (cel-python's ``Environment()`` sets the limit to 2500 each time).
    """
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)


_M_MMAP_THRESHOLD = -3  # glibc mallopt parameter


def return_freed_buffers() -> None:
    """Let memory of closed connections go back to the system (glibc): every TLS connection has asyncio's
    256 KiB buffer; glibc raises its mmap threshold dynamically after the first such buffer is freed, after
    which they come from the heap and a thousand closed watches leave hundreds of MB behind. A fixed threshold
    keeps them in mappings of their own, unmapped when freed. No-op without glibc."""
    name = ctypes.util.find_library("c")
    if not name or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    except (OSError, AttributeError):
        pass


# Large inputs (a body of megabytes, a patch that builds a large object) leave their decoded objects' memory
# in glibc's heaps once freed: pages between live chunks stay with the process. ``malloc_trim`` hands every
# free page back (``madvise``); it runs once, on a timer thread (ctypes releases the GIL), a second after the
# first large input of a burst, so a burst of them costs one trim and a quiet server none.
LARGE_INPUT_BYTES = 256 * 1024
_TRIM_DELAY = 1.0


class _Trimmer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.trims = 0
        name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
        try:
            self._trim = ctypes.CDLL(name).malloc_trim if name else None
        except (OSError, AttributeError):
            self._trim = None

    def note(self, nbytes: int) -> None:
        """A request handled ``nbytes`` of input or object: at ``LARGE_INPUT_BYTES`` or more, trim soon."""
        if nbytes < LARGE_INPUT_BYTES or self._trim is None:
            return
        with self._lock:
            if self._timer is None:
                self._timer = threading.Timer(_TRIM_DELAY, self._run)
                self._timer.daemon = True
                self._timer.start()

    def _run(self) -> None:
        with self._lock:
            self._timer = None
        if self._trim is not None:
            self._trim(0)
            self.trims += 1


TRIMMER = _Trimmer()


def too_large() -> st.StatusError:
    return st.too_large(f"Request entity too large: limit is {MAX_BODY_BYTES}")


def depth_exceeded() -> st.StatusError:
    """Go's scanner error for JSON nested deeper than ``MAX_DEPTH``, as the decoder reports it (400)."""
    return st.bad_request("couldn't get version/kind; json parse error: invalid character '[' exceeded max depth")


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests more than ``limit`` arrays/objects deep (iterative: safe at any depth)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def encoded_size(value: Any) -> int:
    """The length of ``value`` as compact JSON, computed without recursion (evanphx/json-patch measures the
    bytes a ``copy`` duplicates this way)."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            size += 1 + max(0, 2 * len(item) - 1) + 1  # braces, colons and commas
            for key, child in item.items():
                size += len(json.dumps(key))
                stack.append(child)
        elif isinstance(item, list):
            size += 2 + max(0, len(item) - 1)
            stack.extend(item)
        elif isinstance(item, str):
            size += len(json.dumps(item, ensure_ascii=False).encode())
        else:
            size += len(json.dumps(item))
    return size


def load_json(raw: bytes | str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """JSON within ``MAX_DEPTH``; ValueError (the caller's 400) when malformed, ``depth_exceeded`` when deeper.
    ``object_pairs_hook`` as ``json.loads``' (the field validation's duplicate-key check)."""
    try:
        value = json.loads(raw, parse_constant=_no_constants, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise depth_exceeded() from None
    opens = raw.count(b"[" if isinstance(raw, bytes) else "[") + raw.count(b"{" if isinstance(raw, bytes) else "{")
    if opens > MAX_DEPTH and exceeds_depth(value):
        raise depth_exceeded()
    return value


def _no_constants(name: str) -> Any:
    """NaN and Infinity are not JSON (Go's decoder refuses them; Python's would accept them)."""
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


# ---- YAML ----------------------------------------------------------------------------------------------------

def allowed_alias_ratio(decode_count: int) -> float:
    """goyaml v2 ``allowedAliasRatio``: 99% of decode steps may come from aliases in small documents, scaling
    down to 10% for documents of four million steps."""
    if decode_count <= _ALIAS_RATIO_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decode_count - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


class YAMLLimitError(yaml.YAMLError):
    pass


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def check_aliasing(root: Node) -> None:
    """Count decode steps over the composed node graph in document order, as goyaml's decoder takes them: an
    alias costs one step plus every step of what it names, all counted as alias steps. Raises
    :class:`YAMLLimitError` as soon as the aliased share is excessive, and ``too_large`` when the expanded
    document would exceed ``MAX_YAML_EXPANDED_BYTES`` (a long string named many times passes the step rule), both
    before anything is expanded. The work is linear in the document: each node's cost is computed once."""
    cost: dict[int, tuple[int, int]] = {}  # id(node) → (decode steps, expanded bytes), once fully visited
    open_nodes: set[int] = set()
    decode = alias = 0
    stack: list[tuple[bool, Node]] = [(False, root)]  # (closing, node): a pre-order walk without recursion
    sums: list[list[int]] = []  # per open collection: [steps, bytes] so far
    total_bytes = 0
    while stack:
        closing, node = stack.pop()
        if closing:
            open_nodes.discard(id(node))
            steps, size = sums.pop()
            cost[id(node)] = (steps, size)
            if sums:
                sums[-1][0] += steps
                sums[-1][1] += size
            else:
                total_bytes = size
            continue
        if id(node) in open_nodes:
            raise YAMLLimitError("yaml: anchor value contains itself")
        if id(node) in cost:  # seen before: this occurrence is an alias
            steps, size = cost[id(node)]
            decode += 1 + steps
            alias += steps
            if sums:
                sums[-1][0] += 1 + steps
                sums[-1][1] += size
        else:
            decode += 1
            children = _children(node)
            if isinstance(node, SequenceNode | MappingNode):
                open_nodes.add(id(node))
                sums.append([1, 2 + len(children)])  # brackets, commas and colons
                stack.append((True, node))
                stack.extend((False, c) for c in reversed(children))
            else:
                leaf = (1, len(node.value) + 2)
                cost[id(node)] = leaf
                if sums:
                    sums[-1][0] += 1
                    sums[-1][1] += leaf[1]
                else:
                    total_bytes = leaf[1]
        if alias > 100 and decode > 1000 and alias / decode > allowed_alias_ratio(decode):
            raise YAMLLimitError("yaml: document contains excessive aliasing")
        if sums and sums[-1][1] > MAX_YAML_EXPANDED_BYTES:  # every addition lands in the innermost open collection
            raise too_large()
    if total_bytes > MAX_YAML_EXPANDED_BYTES:
        raise too_large()


def load_yaml(text: str, inspect: Callable[[Node], None] | None = None) -> Any:
    """The first YAML document as the JSON value ``sigs.k8s.io/yaml.YAMLToJSON`` makes of it (timestamps become
    strings; .inf/.nan are refused; goyaml's ``Unmarshal`` reads the first document and leaves the rest), with
    goyaml's alias limit and a bound on its JSON form. ``inspect`` sees the composed node graph once it passed
    the alias limit (the field validation's duplicate-key check), so the document is parsed once."""
    loader = _Loader(text)
    try:
        node = loader.get_node() if loader.check_node() else None
        if node is None:
            return None
        if "*" in text:
            check_aliasing(node)
        if inspect is not None:
            inspect(node)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    encoded = json.dumps(data, default=str, allow_nan=False, separators=(",", ":"))
    if len(encoded) > MAX_YAML_EXPANDED_BYTES:
        raise too_large()
    return json.loads(encoded)


# ---- stored objects ------------------------------------------------------------------------------------------

def check_stored_size(encoded: str | bytes) -> None:
    """etcd's request limit on one object (raised before anything is written): past ``MAX_OBJECT_BYTES`` etcd
    refuses the write; past ``ETCD_CLIENT_MAX_SEND_BYTES`` kube-apiserver's etcd client does not even send it.
    Either error reaches the client unconverted: a 500 with no reason."""
    size = len(encoded)
    TRIMMER.note(size)
    if size <= MAX_OBJECT_BYTES:
        return
    message = "etcdserver: request is too large" if size <= ETCD_CLIENT_MAX_SEND_BYTES else (
        "rpc error: code = ResourceExhausted desc = trying to send message larger than max "
        f"({size} vs. {ETCD_CLIENT_MAX_SEND_BYTES})")
    err = st.internal_error("")
    err.status.update(message=message)
    err.status.pop("reason", None)
    raise err
