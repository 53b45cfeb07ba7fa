"""Combine the facts of a file's statements into its analysis.

This is the only step that looks across statements: which classes are a framework's
modules (LightningModules), ``nn.Module``s or Datasets (directly, through an import
alias, or through another class in the same file), and which ``.fit`` calls are on a
framework's trainer (``quickdev.frameworks``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import replace

from quickdev.analysis.facts import ClassFact, FitCall, FunctionFact, StatementFacts
from quickdev.analysis.findings import Analysis, EntryPoint, Knob, Step, StepKind
from quickdev.frameworks import lens_facts

_LENS = lens_facts()
FRAMEWORK_BASES = _LENS.module_bases
MODULE_BASES = frozenset({"Module", *FRAMEWORK_BASES})
DATASET_BASES = frozenset({"Dataset", "IterableDataset", "TensorDataset"})
FRAMEWORK_STEPS = _LENS.step_methods
# train_step, val_step, evaluate_step, train_one_epoch, test_batch, ...
LOOP_STEP = re.compile(
    r"^(train|training|val|valid|validation|eval|evaluate|test)(_one)?_(step|epoch|batch)$"
)

Located = tuple[int, StatementFacts]  # (0-based line where the statement starts, its facts)


def resolve(statements: Iterable[Located]) -> Analysis:
    # One pass over the statements; this runs on every lens request after an edit, over
    # every statement of the file: loops, not generators, and empty facts skipped cheaply.
    classes: list[tuple[int, ClassFact]] = []
    functions: list[tuple[int, FunctionFact]] = []
    aliases: dict[str, str] = {}
    trainer_names: set[str] = set()
    fit_calls: list[tuple[int, FitCall]] = []
    entries: list[EntryPoint] = []
    has_loop = False
    training_loops: list[Step] = []
    knobs: list[Knob] = []
    imports_torch = False
    for start, facts in statements:
        imports_torch = imports_torch or facts.imports_torch
        for c in facts.classes:
            classes.append((start, c))
        for f in facts.functions:
            functions.append((start, f))
        if facts.aliases:
            aliases.update(facts.aliases)
        if facts.trainer_names:
            trainer_names.update(facts.trainer_names)
        for fit in facts.fit_calls:
            fit_calls.append((start, fit))
        if facts.main_guard is not None:
            entries.append(EntryPoint("main_guard", start + facts.main_guard))
        if facts.main_call is not None:
            entries.append(EntryPoint("main_call", start + facts.main_call))
        if facts.top_level_loop is not None:
            has_loop = True
        if facts.training_loop is not None:
            loop = facts.training_loop
            training_loops.append(
                Step("train_loop", "training loop", start + loop.line, start + loop.body_line)
            )
        for k in facts.knobs:
            knobs.append(replace(k, line=start + k.line))

    hierarchy = _hierarchy(
        tuple(sorted(aliases.items())), tuple((c.name, c.bases) for _, c in classes)
    )
    steps: list[Step] = training_loops
    for start, cls in classes:
        for kind, qualname, line, body_line in _class_steps(cls, hierarchy):
            steps.append(Step(kind, qualname, start + line, start + body_line))
    for start, f in functions:
        if LOOP_STEP.match(f.name):
            steps.append(_step("loop_step", f.name, start, f))
        elif f.training_body is not None:
            steps.append(_step("train_loop", f.name, start, f))

    fits = [
        (start, fit)
        for start, fit in fit_calls
        if fit.receiver is None or fit.receiver in trainer_names
    ]
    entries.extend(EntryPoint("trainer_fit", start + f.line) for start, f in fits if f.top_level)
    if not entries and imports_torch and has_loop:
        # A script that trains in a module-level loop, with no main() or guard: it runs
        # from its top, where its lenses go (not at the first loop, which may be any loop).
        entries = [EntryPoint("top_level_loop", 0)]
    return Analysis(
        entry_points=tuple(sorted(entries, key=lambda e: e.line)),
        steps=tuple(sorted(steps, key=lambda s: s.line)),
        knobs=tuple(sorted(knobs, key=lambda k: k.line)),
        framework_label=next((fit.label for _, fit in fits if fit.label), None),
    )


Hierarchy = tuple[frozenset[str], frozenset[str], frozenset[str]]
_RelativeStep = tuple[StepKind, str, int, int]


# What a class's methods are, relative to its statement, per hierarchy: the same for every
# class an edit did not touch (facts are kept between edits), so computed once for it.
@functools.lru_cache(maxsize=4096)
def _class_steps(cls: ClassFact, hierarchy: Hierarchy) -> tuple[_RelativeStep, ...]:
    framework_modules, modules, datasets = hierarchy
    steps = []
    for m in cls.methods:
        kind = _method_kind(m, cls.name, framework_modules, modules, datasets)
        if kind is not None:
            step = _step(kind, f"{cls.name}.{m.name}", 0, m)
            steps.append((kind, step.qualname, step.line, step.body_line))
    return tuple(steps)


def _step(kind: StepKind, qualname: str, start: int, f: FunctionFact) -> Step:
    """A function's step: the breakpoint in its training loop's body when it has one (each
    step, not each call), else on its first statement."""
    body = f.training_body if f.training_body is not None and kind != "framework_step" else None
    return Step(kind, qualname, start + f.line, start + (f.body_line if body is None else body))


@functools.lru_cache(maxsize=64)
def _hierarchy(
    aliases: tuple[tuple[str, str], ...], classes: tuple[tuple[str, tuple[str, ...]], ...]
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(a framework's modules, nn.Modules, Datasets) among the file's classes; the same
    between most edits, hence cached."""
    alias = dict(aliases)
    bases_of = {name: {alias.get(b, b) for b in bases} for name, bases in classes}
    framework_modules = _descendants(bases_of, FRAMEWORK_BASES)
    modules = _descendants(bases_of, MODULE_BASES) | framework_modules
    datasets = _descendants(bases_of, DATASET_BASES)
    return frozenset(framework_modules), frozenset(modules), frozenset(datasets)


def _descendants(bases_of: dict[str, set[str]], roots: frozenset[str]) -> set[str]:
    """Classes of this file that derive from ``roots``, however many local classes deep."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, bases in bases_of.items():
            if name not in found and (bases & roots or bases & found):
                found.add(name)
                changed = True
    return found


def _method_kind(
    method: FunctionFact,
    cls: str,
    framework_modules: frozenset[str],
    modules: frozenset[str],
    datasets: frozenset[str],
) -> StepKind | None:
    name = method.name
    if cls in framework_modules and name in FRAMEWORK_STEPS:
        return "framework_step"
    if cls in modules and name == "forward":
        return "forward"
    if cls in datasets and name in ("__getitem__", "__iter__"):
        return "getitem"
    if LOOP_STEP.match(name) or (cls not in framework_modules and name in FRAMEWORK_STEPS):
        return "loop_step"
    if method.training_body is not None:
        return "train_loop"  # a trainer class's own fit()/train() loop
    return None
