"""Facts about one top-level statement, found without looking at the rest of the file.

A file's analysis is the combination of its statements' facts (see ``resolve.py``), which
is what lets an edited file be re-analysed by re-parsing only the statements it touched.
Lines here are relative to the statement's first line (decorators included).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace

from quickdev.analysis.findings import Knob
from quickdev.analysis.knobs import knob_from_assign, knob_from_call
from quickdev.frameworks import lens_facts, scan_label_of

# What the frameworks' trainers look like in a script (quickdev.frameworks).
_LENS = lens_facts()
TORCH_PACKAGES = frozenset({"torch", *_LENS.script_packages})

_Rel = Callable[[int], int]  # turns a parsed line number into one relative to the statement
# ``try`` statements: ast.TryStar (``except*``) exists from Python 3.11; 3.10 has only ast.Try.
_TRY_STATEMENTS: tuple[type[ast.Try | ast.TryStar], ...] = (
    ast.Try,
    getattr(ast, "TryStar", ast.Try),
)


@dataclass(frozen=True)
class FunctionFact:
    name: str
    line: int
    body_line: int
    # The first statement of the innermost loop that trains (calls ``backward`` or steps an
    # optimizer), where a breakpoint stops once per training step; None: no such loop.
    training_body: int | None = None


@dataclass(frozen=True)
class TrainingLoop:
    """A loop that trains: ``line`` is the outermost loop around the training call,
    ``body_line`` the first statement of the innermost one (one stop per step)."""

    line: int
    body_line: int


@dataclass(frozen=True)
class ClassFact:
    name: str
    bases: tuple[str, ...]  # last component of each base as written: "LightningModule"
    methods: tuple[FunctionFact, ...]


@dataclass(frozen=True)
class FitCall:
    line: int
    receiver: str | None  # the variable ``.fit`` is called on; None for ``Trainer(...).fit``
    top_level: bool  # outside any function: the script does its work right there
    # How the workspace scan labels a script this call runs ("lightning"), if its framework
    # labels it.
    label: str | None = None


@dataclass(frozen=True)
class StatementFacts:
    classes: tuple[ClassFact, ...] = ()
    functions: tuple[FunctionFact, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # (local name, imported name)
    main_guard: int | None = None
    main_call: int | None = None
    top_level_loop: int | None = None
    training_loop: TrainingLoop | None = None  # a top-level loop that trains
    imports_torch: bool = False  # torch, or a framework's package (TORCH_PACKAGES)
    trainer_names: tuple[str, ...] = ()
    fit_calls: tuple[FitCall, ...] = ()
    knobs: tuple[Knob, ...] = ()


def first_line(stmt: ast.stmt) -> int:
    """1-based first line of a statement, counting its decorators."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def statement_facts(stmt: ast.stmt) -> StatementFacts:
    base = first_line(stmt)

    def rel(lineno: int) -> int:
        return lineno - base

    classes: list[ClassFact] = []
    functions: list[FunctionFact] = []
    aliases: list[tuple[str, str]] = []
    trainer_names: list[str] = []
    fit_calls: list[FitCall] = []
    knobs: list[Knob] = []
    imports_torch = False

    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        functions.append(_function_fact(stmt, rel))
    global_knob = knob_from_assign(stmt)
    if global_knob is not None:
        knobs.append(_relative_knob(global_knob, rel))
    top_level_nodes = _outside_functions(stmt)
    for node in ast.walk(stmt):
        if isinstance(node, ast.ClassDef):
            classes.append(_class_fact(node, rel))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            aliases.extend((a.asname, a.name.rsplit(".", 1)[-1]) for a in node.names if a.asname)
            imports_torch = imports_torch or _imports_torch(node)
        elif isinstance(node, ast.Assign) and _is_trainer_call(node.value):
            trainer_names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call):
            fit = _fit_call(node, rel, id(node) in top_level_nodes)
            if fit is not None:
                fit_calls.append(fit)
            knob = knob_from_call(node)
            if knob is not None:
                knobs.append(_relative_knob(knob, rel))

    return StatementFacts(
        classes=tuple(classes),
        functions=tuple(functions),
        aliases=tuple(aliases),
        main_guard=rel(stmt.lineno) if _is_main_guard(stmt) else None,
        main_call=rel(stmt.lineno) if _is_bare_main_call(stmt) else None,
        top_level_loop=rel(stmt.lineno) if _holds_loop(stmt) else None,
        training_loop=_relative_loop(_training_loop([stmt]), rel),
        imports_torch=imports_torch,
        trainer_names=tuple(trainer_names),
        fit_calls=tuple(fit_calls),
        knobs=tuple(knobs),
    )


def _function_fact(node: ast.FunctionDef | ast.AsyncFunctionDef, rel: _Rel) -> FunctionFact:
    body = node.body
    first = body[0]
    if len(body) > 1 and _is_docstring(first):
        first = body[1]
    loop = _training_loop(body)
    training_body = rel(loop.body_line) if loop is not None else None
    return FunctionFact(node.name, rel(node.lineno), rel(first.lineno), training_body)


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _training_loop(statements: list[ast.stmt]) -> TrainingLoop | None:
    """The first loop among ``statements`` (in blocks, not in nested functions or classes)
    whose body trains; lines as parsed."""
    for stmt in statements:
        if isinstance(stmt, _SCOPES):
            continue
        if isinstance(stmt, _LOOPS):
            inner = _training_loop(stmt.body)
            if inner is not None:
                return TrainingLoop(stmt.lineno, inner.body_line)
            if _trains(stmt.body):
                return TrainingLoop(stmt.lineno, stmt.body[0].lineno)
            continue
        found = _training_loop([s for block in _blocks(stmt) for s in block])
        if found is not None:
            return found
    return None


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement blocks of a compound statement that is not a loop or a scope."""
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [stmt.body]
    if isinstance(stmt, _TRY_STATEMENTS):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    return []


def _trains(statements: list[ast.stmt]) -> bool:
    """Whether these statements (not nested functions) call ``backward`` or step an
    optimizer: ``loss.backward()``, ``scaler.scale(loss).backward()``,
    ``accelerator.backward(loss)``, ``optimizer.step()``, ``scaler.step(optimizer)``."""
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Call) and _is_training_call(node):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _is_training_call(call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("backward", "manual_backward"):
        return True
    if func.attr != "step":
        return False
    # An optimizer's step, not a scheduler's: the receiver or the argument names one.
    names = [_last_name(func.value), *(_last_name(a) for a in call.args)]
    return any(name is not None and "opt" in name.lower() for name in names)


def _relative_loop(loop: TrainingLoop | None, rel: _Rel) -> TrainingLoop | None:
    return None if loop is None else TrainingLoop(rel(loop.line), rel(loop.body_line))


def _class_fact(node: ast.ClassDef, rel: _Rel) -> ClassFact:
    methods = tuple(
        _function_fact(item, rel)
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    )
    bases = tuple(name for b in node.bases if (name := _last_name(b)) is not None)
    return ClassFact(node.name, bases, methods)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _last_name(expr: ast.expr) -> str | None:
    """``pl.LightningModule`` → ``LightningModule``; ``Generic[T]`` → ``Generic``."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _is_trainer_call(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and _last_name(expr.func) in _LENS.trainer_classes


def _fit_call(node: ast.Call, rel: _Rel, top_level: bool) -> FitCall | None:
    func = node.func
    constructor = _last_name(func)
    if constructor in _LENS.entry_constructors:
        return FitCall(rel(node.lineno), None, top_level, scan_label_of(constructor))
    if not isinstance(func, ast.Attribute) or func.attr not in _LENS.entry_methods:
        return None
    label = scan_label_of(func.attr)
    if _is_trainer_call(func.value):
        return FitCall(rel(node.lineno), None, top_level, label)
    if isinstance(func.value, ast.Name):
        return FitCall(rel(node.lineno), func.value.id, top_level, label)
    return None


def _holds_loop(stmt: ast.stmt) -> bool:
    """A top-level loop, also one inside ``try:``/``with``/``if`` blocks (a training loop
    stopped by Ctrl+C, under a profiler's ``with``, behind a flag). A main guard is an
    entry point of its own."""
    if isinstance(stmt, ast.For | ast.While | ast.AsyncFor):
        return True
    if isinstance(stmt, ast.If) and _is_main_guard(stmt):
        return False
    blocks: list[list[ast.stmt]] = []
    if isinstance(stmt, _TRY_STATEMENTS):
        blocks = [stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        blocks = [stmt.body]
    elif isinstance(stmt, ast.If):
        blocks = [stmt.body, stmt.orelse]
    return any(_holds_loop(inner) for block in blocks for inner in block)


def _is_main_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    test = stmt.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    has_name = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    has_main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return has_name and has_main


def _imports_torch(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        names = [node.module or ""] if node.level == 0 else []
    else:
        names = [a.name for a in node.names]
    return any(n.split(".")[0] in TORCH_PACKAGES for n in names)


def _is_bare_main_call(stmt: ast.stmt) -> bool:
    """A top-level ``main()`` (or ``cli_main()``, ``run()``): the script runs it on import.

    Only plain names count: ``subprocess.run(...)`` at top level is not an entry point.
    """
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    func = stmt.value.func
    if not isinstance(func, ast.Name):
        return False
    return func.id in ("main", "run") or func.id.endswith("_main")


def _outside_functions(stmt: ast.stmt) -> set[int]:
    """ids of the nodes that run when the module runs, not when a function is called."""
    found: set[int] = set()
    pending: list[ast.AST] = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        found.add(id(node))
        pending.extend(ast.iter_child_nodes(node))
    return found


def _relative_knob(knob: Knob, rel: _Rel) -> Knob:
    return replace(knob, line=rel(knob.line))


def shift_facts(facts: StatementFacts, from_line: int, delta: int) -> StatementFacts:
    """The facts after ``delta`` lines were inserted (or removed) before ``from_line``."""

    def move(line: int) -> int:
        return line + delta if line >= from_line else line

    def move_optional(line: int | None) -> int | None:
        return None if line is None else move(line)

    def move_function(f: FunctionFact) -> FunctionFact:
        return FunctionFact(f.name, move(f.line), move(f.body_line), move_optional(f.training_body))

    loop = facts.training_loop

    return replace(
        facts,
        classes=tuple(
            ClassFact(c.name, c.bases, tuple(move_function(m) for m in c.methods))
            for c in facts.classes
        ),
        functions=tuple(move_function(f) for f in facts.functions),
        main_guard=move_optional(facts.main_guard),
        main_call=move_optional(facts.main_call),
        top_level_loop=move_optional(facts.top_level_loop),
        training_loop=None if loop is None else TrainingLoop(move(loop.line), move(loop.body_line)),
        fit_calls=tuple(replace(f, line=move(f.line)) for f in facts.fit_calls),
        knobs=tuple(replace(k, line=move(k.line)) for k in facts.knobs),
    )
