"""Combine the facts of a file's statements into its analysis.

This is the only step that looks across statements: which classes are LightningModules,
``nn.Module``s or Datasets (directly, through an import alias, or through another class
in the same file), and which ``.fit`` calls are on a Lightning ``Trainer``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from quickdev.analysis.facts import StatementFacts
from quickdev.analysis.model import Analysis, EntryPoint, Knob, Step, StepKind

LIGHTNING_BASES = frozenset({"LightningModule"})
MODULE_BASES = frozenset({"Module", "LightningModule"})
DATASET_BASES = frozenset({"Dataset", "IterableDataset", "TensorDataset"})
LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
# train_step, val_step, evaluate_step, train_one_epoch, test_batch, ...
LOOP_STEP = re.compile(
    r"^(train|training|val|valid|validation|eval|evaluate|test)(_one)?_(step|epoch|batch)$"
)

Located = tuple[int, StatementFacts]  # (0-based line where the statement starts, its facts)


def resolve(statements: Iterable[Located]) -> Analysis:
    located = list(statements)
    aliases = {local: name for _, facts in located for local, name in facts.aliases}

    def canonical(name: str) -> str:
        return aliases.get(name, name)

    classes = [(start, c) for start, facts in located for c in facts.classes]
    bases_of = {c.name: {canonical(b) for b in c.bases} for _, c in classes}
    lightning = _descendants(bases_of, LIGHTNING_BASES)
    modules = _descendants(bases_of, MODULE_BASES) | lightning
    datasets = _descendants(bases_of, DATASET_BASES)

    steps: list[Step] = []
    for start, cls in classes:
        for m in cls.methods:
            kind = _method_kind(m.name, cls.name, lightning, modules, datasets)
            if kind is not None:
                qualname = f"{cls.name}.{m.name}"
                steps.append(Step(kind, qualname, start + m.line, start + m.body_line))
    for start, facts in located:
        for f in facts.functions:
            if LOOP_STEP.match(f.name):
                steps.append(Step("loop_step", f.name, start + f.line, start + f.body_line))

    trainer_names = {n for _, facts in located for n in facts.trainer_names}
    fits = [
        (start, fit)
        for start, facts in located
        for fit in facts.fit_calls
        if fit.receiver is None or fit.receiver in trainer_names
    ]
    entries: list[EntryPoint] = []
    for start, facts in located:
        if facts.main_guard is not None:
            entries.append(EntryPoint("main_guard", start + facts.main_guard))
        if facts.main_call is not None:
            entries.append(EntryPoint("main_call", start + facts.main_call))
    entries.extend(EntryPoint("trainer_fit", start + f.line) for start, f in fits if f.top_level)
    if not entries:
        # A script that trains in a module-level loop, with no main() or guard.
        entries.extend(
            EntryPoint("top_level_loop", start + facts.top_level_loop)
            for start, facts in located
            if facts.top_level_loop is not None
        )

    knobs = [
        Knob(k.kind, k.flag, start + k.line, k.is_switch, k.default)
        for start, facts in located
        for k in facts.knobs
    ]
    return Analysis(
        entry_points=tuple(sorted(entries, key=lambda e: e.line)),
        steps=tuple(sorted(steps, key=lambda s: s.line)),
        knobs=tuple(sorted(knobs, key=lambda k: k.line)),
        uses_lightning_trainer=bool(fits),
    )


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
    method: str, cls: str, lightning: set[str], modules: set[str], datasets: set[str]
) -> StepKind | None:
    if cls in lightning and method in LIGHTNING_STEPS:
        return "lightning_step"
    if cls in modules and method == "forward":
        return "forward"
    if cls in datasets and method in ("__getitem__", "__iter__"):
        return "getitem"
    if LOOP_STEP.match(method) or (cls not in lightning and method in LIGHTNING_STEPS):
        return "loop_step"
    return None
