"""The backend's layout holds: no import cycle between its packages nor inside any package,
one place for atomic JSON writes, no source file over 400 lines. Read from the sources with
``ast``, so function-local imports count as much as module-level ones."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

BACKEND = Path(__file__).resolve().parent.parent / "python_backend" / "quickdev"
MAX_LINES = 400


def _sources() -> list[Path]:
    return sorted(p for p in BACKEND.rglob("*.py") if "static" not in p.parts)


def _unit(module: str) -> str:
    """``quickdev.job.job`` -> ``job``; a top-level module (``quickdev.cli``) is its own unit."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_of(path: Path) -> str:
    relative = path.relative_to(BACKEND.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            found.add(name)
            # ``from quickdev import cli`` names a unit in the imported names.
            if name == "quickdev":
                found.update(f"quickdev.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("quickdev.")}


def _module_names() -> set[str]:
    return {_module_of(path) for path in _sources()}


def _imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The backend's modules ``path`` imports: ``from pkg import name`` is ``pkg.name`` when
    that is a module, else ``pkg`` itself (its ``__init__``)."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            submodules = {f"{name}.{alias.name}" for alias in node.names} & modules
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(name)
    resolved = set()
    for name in found:
        while name and name not in modules:  # ``import a.b.c`` of a name in a.b
            name = name.rpartition(".")[0]
        if name.startswith("quickdev") and name != module:
            resolved.add(name)
    return resolved


def _member(package: str, module: str) -> str | None:
    """The member of ``package`` (a module, a subpackage, or its own ``__init__``) that holds
    ``module``; None when ``module`` is outside it."""
    if module == package:
        return "__init__"
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1 :].split(".")[0]


def _package_graphs() -> dict[str, dict[str, set[str]]]:
    """Each package's members and which of them import which."""
    modules = _module_names()
    packages = {_module_of(p) for p in _sources() if p.name == "__init__.py"}
    graphs: dict[str, dict[str, set[str]]] = {package: defaultdict(set) for package in packages}
    for path in _sources():
        source = _module_of(path)
        for target in _imported_modules(path, modules):
            for package, graph in graphs.items():
                a, b = _member(package, source), _member(package, target)
                if a is not None and b is not None and a != b:
                    graph[a].add(b)
    return graphs


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in _sources():
        source = _unit(_module_of(path)) if _module_of(path) != "quickdev" else "quickdev"
        for target in _imports(path):
            unit = _unit(target)
            if unit != source:
                graph[source].add(unit)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_backend_packages() -> None:
    graph = _graph()
    assert "job" in graph and "limits" in graph["job"], "the import graph was not read"
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


# Circles inside a package being broken by job (each a note of what it is and who breaks it);
# an entry that no longer holds a circle fails the test, so it is removed with the circle.
KNOWN_CIRCLES: set[str] = set()


def test_no_package_imports_itself_in_a_circle() -> None:
    """Inside each package, its modules, subpackages and ``__init__`` import each other
    without a circle: a split by line count (methods moved into siblings that import the
    class back) or a package's ``__init__`` imported by its own modules shows up here."""
    graphs = _package_graphs()
    assert "children" in graphs["quickdev.job"]["job"], "the import graph was not read"
    circles = {package: cycle for package, graph in graphs.items() if (cycle := _cycle(graph))}
    unexpected = {p: " -> ".join(c) for p, c in circles.items() if p not in KNOWN_CIRCLES}
    assert not unexpected, f"import circles inside packages: {unexpected}"
    gone = KNOWN_CIRCLES - set(circles)
    assert not gone, f"no circle left in {sorted(gone)}: remove it from KNOWN_CIRCLES"


def test_the_package_check_sees_a_circle_through_an_init() -> None:
    graph = {"__init__": {"spawned"}, "spawned": {"__init__"}}
    assert _cycle(graph) == ["__init__", "spawned", "__init__"]
    assert _member("quickdev.job", "quickdev.job") == "__init__"
    assert _member("quickdev.job", "quickdev.job.children.spawned") == "children"
    assert _member("quickdev.job", "quickdev.limits") is None


def test_atomic_json_writes_live_in_one_module() -> None:
    writers = [
        _module_of(p)
        for p in _sources()
        if "os.replace(" in (text := p.read_text(encoding="utf-8")) and "json.dump" in text
    ]
    assert writers == ["quickdev.rundir.jsonio"], writers


def test_no_source_file_over_the_line_limit() -> None:
    long = {
        str(p.relative_to(BACKEND)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_profiler_pins_are_the_same_everywhere() -> None:
    """pyproject's ``profile`` extra is the source; the launcher's install hint and the
    extension's interpreter check name the same pins."""
    import tomllib
    from quickdev.tensorboard.launch import INSTALL_HINT

    repo = BACKEND.parent.parent
    pins = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["profile"]
    assert pins and all("==" in pin for pin in pins)
    assert sorted(INSTALL_HINT.removeprefix("pip install ").split()) == sorted(pins)
    check = (repo / "extension" / "server" / "pythonCheck.ts").read_text(encoding="utf-8")
    for pin in pins:
        assert f'"{pin}"' in check, f"extension/server/pythonCheck.ts does not pin {pin}"
