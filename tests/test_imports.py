"""The import graph of the mockgpu package: no cycles, no imports hidden inside functions.

DESIGN.md, "The package, as rooms": no two modules import each other (directly or around a loop), and no
import hides inside a function to dodge a cycle; only optional heavy dependencies load lazily, and
``docs/ARCHITECTURE.md`` ("Lazy imports") names them. This test reads every module of the package with
the standard library's ``ast`` (nothing is imported or run) and fails on:

- any cycle among mockgpu modules, counting every import: module-level, inside a function, or under
  ``if TYPE_CHECKING:`` (moving one import of a loop into a function or behind a type-only guard hides the
  cycle from Python, not from the design);
- any import inside a function or method that is not in ``LAZY_ALLOWED`` below, the same list the
  architecture notes give with each entry's reason;
- a module of the leaf room ``mockgpu/apimachinery`` importing any other mockgpu module;
- an import against DESIGN.md's direction of imports (``LAYERS``), or a new import of the API server's
  internals by the controllers, the scheduler loop or the kubelets;
- a backend importing another backend (DESIGN.md: backends share code through ``backends/common``, never each
  other's folders), or the widgets reaching past the backends' interface (``backends/base.py``, ``backends/common``).

Run it as a script (``python tests/test_imports.py``) for the figures: modules, module-level edges,
cycles (strongly connected components), and function-local imports by target.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mockgpu"

# Imports that may stay inside a function: (importing module, imported module or package, why). The importer
# "mockgpu.*" means any module of the package. Each is an optional or heavy dependency that most callers never
# need, so it loads on first use; docs/ARCHITECTURE.md "Lazy imports" gives the same list.
_KUBERNETES = ("the official client: about a second to import; the CLI's fast paths (spec checks, --help), the "
               "device plugin, nvidia-smi and the pure API server modules must not pay for it")
_NOTEBOOK = "the notebook extra: absent from the device-plugin image (pip install . without extras)"
LAZY_ALLOWED: list[tuple[str, str, str]] = [
    ("mockgpu.*", "kubernetes", _KUBERNETES),
    ("mockgpu.*", "urllib3", "the official client's HTTP layer, loaded with it"),
    ("mockgpu.*", "matplotlib", _NOTEBOOK),
    ("mockgpu.*", "IPython", _NOTEBOOK),
    ("mockgpu.*", "tqdm", _NOTEBOOK),
    ("mockgpu.*", "ipykernel", "JupyterLab's kernel, only for `mockgpu lab`"),
    ("mockgpu.*", "jupyter_client", "JupyterLab's kernel specs, only for `mockgpu lab`"),
    ("mockgpu.backends.embedded.tls", "cryptography", "certificates, made only when a cluster is created"),
    ("mockgpu.control.apiserver.watch", "aiohttp", "the pure API server modules import without aiohttp"),
    ("mockgpu.control.apiserver", "mockgpu.control.apiserver.server",
     "the package's lazy APIServer: aiohttp only for the server, not for the pure modules"),
    ("mockgpu.control.scheduler", "mockgpu.control.scheduler.scheduler",
     "the package's lazy Scheduler: " + _KUBERNETES),
    ("mockgpu.control.controllers", "mockgpu.control.controllers.manager",
     "the package's lazy ControllerManager: " + _KUBERNETES),
    # the CLI imports every command module to build its parser (mockgpu.cli.COMMAND_MODULES): what a command
    # runs loads when it runs
    ("mockgpu.dra.command", "mockgpu.dra", "`mockgpu dra-driver`: its gRPC servers and the official client"),
    ("mockgpu.dra.command", "mockgpu.config", "`mockgpu dra-driver`: the spec, with pydantic"),
    ("mockgpu.sim.command", "mockgpu.sim", "`mockgpu sim`: numpy, " + _NOTEBOOK),
    ("mockgpu.sched.dra.allocator", "mockgpu.sched.dra.cel",
     "cel-python: about 0.2 s to import and build its parser, only once DRA is used"),
]

# Function-local imports still present that are none of the above ("known, issue 19"). A new one fails the test, and
# so does a listed one that is gone, so the list only shrinks; issue 19's "one cluster lifecycle" emptied it (29 -> 0).
# (importing module, imported module)
KNOWN_LOCAL: set[tuple[str, str]] = set()

# Cycles still present, as frozensets of their modules ("known, issue 19"); a new cycle fails the test, and a
# listed one that is gone fails too. Issue 19 named 7; all are broken.
KNOWN_CYCLES: set[frozenset[str]] = set()


# DESIGN.md's direction of imports, lowest first: a module may import its own room and rooms listed before it.
# (Top-level modules beside the rooms sit with the room they serve.)
LAYERS: list[tuple[str, ...]] = [
    ("apimachinery", "errors", "helptext", "privatefs"),
    ("gpu",),
    ("config",),
    ("deviceplugin", "dra"),
    ("sched",),
    ("control",),
    ("backends",),
    ("sim", "widgets", "capstone", "labcopies"),
    ("commands", "cli", "workloads", "cuda"),
]
# DESIGN.md: the controllers, the scheduler loop and the kubelets talk to the API server through the API, and
# do not import its internals. Still importing one ("known, issue 19"; a new one fails, a gone one must go):
SIDEWAYS_KNOWN: set[tuple[str, str]] = {
    ("mockgpu.control.controllers.cronjob", "mockgpu.control.apiserver.cronjobs"),  # one cron parser for both
    ("mockgpu.control.kubelet.kubelet", "mockgpu.control.apiserver.podlogs"),  # the pod log file layout
    ("mockgpu.control.kubelet.podlogsgc", "mockgpu.control.apiserver.podlogs"),
    ("mockgpu.control.kubelet.server", "mockgpu.control.apiserver.podlogs"),
}
_CLIENTS = ("mockgpu.control.controllers", "mockgpu.control.kubelet", "mockgpu.control.scheduler")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (``from a import b`` counts a.b when a/b.py exists, else a)
    line: int
    local: bool  # inside a function or method
    type_checking: bool  # under ``if TYPE_CHECKING:``


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".")
    if not is_pkg:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(mod: str, path: Path, known: set[str]) -> list[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found: list[Import] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = _resolve(mod, is_pkg, node)
        out = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            out.append(sub if sub in known else base)
        return out

    def visit(node: ast.AST, local: bool, tc: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in dict.fromkeys(targets(child)):
                    found.append(Import(mod, t, child.lineno, local, tc))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True, tc)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.body:
                    visit(ast.Module(body=[sub], type_ignores=[]), local, True)
                for sub in child.orelse:
                    visit(ast.Module(body=[sub], type_ignores=[]), local, tc)
            else:
                visit(child, local, tc)

    visit(tree, False, False)
    return found


def all_imports() -> list[Import]:
    mods = modules()
    known = set(mods)
    out: list[Import] = []
    for mod, path in mods.items():
        out.extend(imports_of(mod, path, known))
    return out


def _owner(target: str, known: set[str]) -> str | None:
    """The mockgpu module an import names (``mockgpu.a.b.Name`` -> ``mockgpu.a.b``)."""
    t = target
    while t:
        if t in known:
            return t
        t = t.rpartition(".")[0]
    return None


def graph(imps: list[Import]) -> dict[str, set[str]]:
    """Edges among mockgpu modules, from every import: module-level, inside functions and under
    ``if TYPE_CHECKING:`` alike (a cycle hidden in a function or behind a type-only import is still a
    cycle of the design). Importing ``a.b.c`` also runs ``a`` and ``a.b``'s ``__init__``: those edges count
    too, as they do for Python."""
    known = set(modules())
    g: dict[str, set[str]] = {m: set() for m in known}
    for imp in imps:
        owner = _owner(imp.target, known)
        if owner is None:
            continue
        parts = owner.split(".")
        for i in range(1, len(parts) + 1):
            dep = ".".join(parts[:i])
            if dep in known and dep != imp.module and not imp.module.startswith(dep + "."):
                g[imp.module].add(dep)
    return g


def cycles(g: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[frozenset[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def local_imports(imps: list[Import]) -> list[Import]:
    return [i for i in imps if i.local and not i.type_checking]


def lazy_allowed(imp: Import) -> bool:
    for mod, target, _why in LAZY_ALLOWED:
        if (mod == "mockgpu.*" or imp.module == mod) and (imp.target == target or imp.target.startswith(target + ".")):
            return True
    return False


def test_no_import_cycles():
    found = set(cycles(graph(all_imports())))
    new = [sorted(c) for c in found - KNOWN_CYCLES]
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not new, f"new import cycles among mockgpu modules: {new}"
    assert not gone, f"cycles listed as known (issue 19) are gone: drop them from KNOWN_CYCLES: {gone}"


def test_no_function_local_imports_outside_the_allowlist():
    local = [i for i in local_imports(all_imports()) if not lazy_allowed(i)]
    bad = [f"{i.module}:{i.line} imports {i.target}" for i in local if (i.module, i.target) not in KNOWN_LOCAL]
    assert not bad, "imports inside functions (move them to the top, or, for an optional heavy dependency, name " \
        "them in LAZY_ALLOWED and docs/ARCHITECTURE.md):\n" + "\n".join(bad)
    gone = KNOWN_LOCAL - {(i.module, i.target) for i in local}
    assert not gone, f"listed in KNOWN_LOCAL (issue 19) but no longer inside a function: drop them: {sorted(gone)}"


def test_allowlist_entries_are_used():
    local = local_imports(all_imports())
    unused = [(mod, target) for mod, target, _why in LAZY_ALLOWED
              if not any(lazy_allowed(i) and (mod == "mockgpu.*" or i.module == mod)
                         and (i.target == target or i.target.startswith(target + ".")) for i in local)]
    assert not unused, f"LAZY_ALLOWED entries no import uses: {unused}"


def _room(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_imports_follow_the_direction_in_design():
    rank = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}
    g = graph(all_imports())
    rooms = {_room(m) for m in g} - {""}
    assert rooms <= set(rank), f"rooms missing from LAYERS: {sorted(rooms - set(rank))}"
    upward = [f"{a} -> {b}" for a, deps in sorted(g.items()) for b in sorted(deps)
              if _room(a) and _room(b) and rank[_room(b)] > rank[_room(a)]]
    assert not upward, "imports against DESIGN's direction:\n" + "\n".join(upward)


def test_control_clients_do_not_import_the_api_servers_internals():
    g = graph(all_imports())
    found = {(a, b) for a, deps in g.items() if a.startswith(_CLIENTS) for b in deps
             if b.startswith("mockgpu.control.apiserver.")}
    assert not found - SIDEWAYS_KNOWN, f"new imports of API server internals: {sorted(found - SIDEWAYS_KNOWN)}"
    assert not SIDEWAYS_KNOWN - found, f"gone: drop them from SIDEWAYS_KNOWN: {sorted(SIDEWAYS_KNOWN - found)}"


SHARED_BACKEND_MODULES = ("base", "common")  # mockgpu.backends.<these>: the interface and the shared code


def backend_of(module: str) -> str | None:
    """The backend a module belongs to (``mockgpu.backends.kind.render`` -> ``kind``); None outside a backend's
    folder (the interface ``base``, the shared ``common``, everything else)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["mockgpu", "backends"] or parts[2] in SHARED_BACKEND_MODULES:
        return None
    return parts[2]


def cross_backend(g: dict[str, set[str]]) -> list[str]:
    """Edges from one backend's folder into another's."""
    return [f"{a} -> {b}" for a, deps in sorted(g.items()) for b in sorted(deps)
            if backend_of(a) and backend_of(b) and backend_of(a) != backend_of(b)]


def past_the_interface(g: dict[str, set[str]]) -> list[str]:
    """Edges from the widgets (the labs' helper among them) into a backend's own folder."""
    return [f"{a} -> {b}" for a, deps in sorted(g.items()) if a.startswith("mockgpu.widgets") for b in sorted(deps)
            if backend_of(b)]


def test_backends_do_not_import_each_other():
    bad = cross_backend(graph(all_imports()))
    assert not bad, "a backend imports another backend (move what they share to mockgpu/backends/common):\n" + \
        "\n".join(bad)


def test_widgets_start_clusters_only_through_the_backends_interface():
    bad = past_the_interface(graph(all_imports()))
    assert not bad, "the widgets reach into a backend (use mockgpu.backends.base: get_backend, Cluster):\n" + \
        "\n".join(bad)


def test_the_backend_rules_see_a_planted_edge():
    g = {"mockgpu.backends.upstream.cluster": {"mockgpu.backends.embedded.daemon", "mockgpu.backends.common.state",
                                               "mockgpu.backends.base", "mockgpu.backends.upstream.state"},
         "mockgpu.widgets.labkit": {"mockgpu.backends.base", "mockgpu.backends.kind.images"}}
    assert cross_backend(g) == ["mockgpu.backends.upstream.cluster -> mockgpu.backends.embedded.daemon"]
    assert past_the_interface(g) == ["mockgpu.widgets.labkit -> mockgpu.backends.kind.images"]


def test_apimachinery_is_a_leaf():
    if "mockgpu.apimachinery" not in modules():
        pytest.skip("no mockgpu/apimachinery room yet")
    bad = [
        f"{i.module}:{i.line} imports {i.target}"
        for i in all_imports()
        if i.module.startswith("mockgpu.apimachinery")
        and i.target.startswith("mockgpu")
        and not i.target.startswith("mockgpu.apimachinery")
    ]
    assert not bad, "mockgpu/apimachinery must import nothing else of mockgpu:\n" + "\n".join(bad)


def test_the_analyzer_sees_cycles_and_local_imports(tmp_path):
    """The checks above are only as good as this reader: a planted cycle and a planted local import."""
    a = ast.parse("import mockgpu.b\ndef f():\n    import json\n")
    assert isinstance(a.body[0], ast.Import)
    g = {"mockgpu.a": {"mockgpu.b"}, "mockgpu.b": {"mockgpu.c"}, "mockgpu.c": {"mockgpu.a"}, "mockgpu.d": set()}
    assert cycles(g) == [frozenset({"mockgpu.a", "mockgpu.b", "mockgpu.c"})]
    p = tmp_path / "m.py"
    p.write_text(
        "from typing import TYPE_CHECKING\nimport os\nif TYPE_CHECKING:\n    import mockgpu.x\n"
        "def f():\n    import json\n"
    )
    found = imports_of("mockgpu.m", p, {"mockgpu.m"})
    by = {i.target: i for i in found}
    assert by["os"].local is False
    assert by["mockgpu.x"].type_checking is True
    assert by["json"].local is True


def main() -> None:
    imps = all_imports()
    g = graph(imps)
    cyc = cycles(g)
    loc = local_imports(imps)
    print(f"modules: {len(g)}  mockgpu edges: {sum(len(v) for v in g.values())}")
    print(f"cycles (strongly connected components): {len(cyc)}")
    for c in sorted(cyc, key=len):
        print(f"  {len(c)}: {' '.join(sorted(m.removeprefix('mockgpu.') for m in c))}")
    known = sum((i.module, i.target) in KNOWN_LOCAL and not lazy_allowed(i) for i in loc)
    print(f"function-local imports: {len(loc)} (optional heavy, allowed: {sum(lazy_allowed(i) for i in loc)}; "
          f"known, issue 19: {known}; other: {len(loc) - known - sum(lazy_allowed(i) for i in loc)})")
    mg = Counter("mockgpu" if i.target.startswith("mockgpu") else i.target.split(".")[0] for i in loc)
    print("  by target: " + ", ".join(f"{k} {v}" for k, v in mg.most_common()))
    if "-v" in sys.argv:
        for i in loc:
            print(f"  {i.module}:{i.line} {i.target}{'  (allowed)' if lazy_allowed(i) else ''}")
    if "--known" in sys.argv:
        for m, t in sorted({(i.module, i.target) for i in loc if not lazy_allowed(i)}):
            print(f'    ("{m}", "{t}"),')


if __name__ == "__main__":
    main()
