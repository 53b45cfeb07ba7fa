"""The backend's layout holds: no import cycle between its packages, one place for atomic
JSON writes, no source file over 400 lines. Read from the sources with ``ast``, so
function-local imports count as much as module-level ones."""

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
