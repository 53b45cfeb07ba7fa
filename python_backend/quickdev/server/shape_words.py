"""How a recorded name reads in the editor: the inlay hint's label and the hover's markdown,
both built on ``rundir.shapes`` (the formatter the debugger's Variables view uses too)."""

from __future__ import annotations

from pathlib import PurePath

from quickdev.rundir.shapes import (
    EVAL,
    LOOKS_STOPPED,
    LOOP_ITEMS_LOOKED,
    LOOP_WENT_ON,
    MORE_COUNTED,
    SETUP,
    TRAIN,
    Cut,
    NameRecord,
    Seen,
    TensorFacts,
    shape_text,
    tensor_text,
)
from quickdev.server.shape_records import RunOfRecord

PHASE_WORDS = {
    SETUP: "before the model's first forward",
    TRAIN: "training",
    EVAL: "evaluation",
}
# A hint stays one glance long: the first few distinct shapes, each cut to a glance (a
# structure such as an optimizer's param group would fill the line), then how many more.
# The hover has them whole.
LABEL_SHAPES = 3
LABEL_SHAPE_CHARS = 60


# After a shape a budget cut short (the hover says which loop and budget).
CUT_MARK = " (cut by budget)"


def hint_label(name: NameRecord) -> str:
    """``q: f32[64, 6, 256, 64]``; a line that saw several shapes: ``x: f32[8, 16] | f32[8, 4]``;
    more than the hint shows: ``| +5 more``; shapes the run may have bound unseen: ``| …``;
    a shape a budget cut short: ``y: i64[33] (cut by budget)``."""
    texts: dict[str, bool] = {}  # each distinct text -> whether a budget cut it
    for seen in name.seen:
        text = _cut(shape_text(seen.value))
        texts[text] = texts.get(text, False) or seen.cut is not None
    shown = [text + (CUT_MARK if cut else "") for text, cut in texts.items()]
    label = " | ".join(shown[:LABEL_SHAPES])
    hidden = max(len(shown) - LABEL_SHAPES, 0) + name.more
    if hidden:
        label += f" | +{hidden}{'+' if name.more >= MORE_COUNTED else ''} more"
    if name.partial:
        label += " | …"
    return f"{name.name}: {label}"


PARTIAL_WORDS = {
    LOOP_WENT_ON: f"**Not every item looked at**: the loop went on past its first "
    f"{LOOP_ITEMS_LOOKED} items, the ones looked at; it may have bound other shapes.",
    LOOKS_STOPPED: "**Shapes may be missing**: this line was no longer looked at when a later "
    "look found a value not seen before; it may have bound others in between.",
}


def cut_words(cut: Cut) -> str:
    """**Cut short by a budget**: which loop, what ended it, when."""
    where = f"{PurePath(cut.file).name}:{cut.line}"
    if cut.unit == "batches":
        what = f"the pass over a DataLoader at {where} stopped after {cut.count} batch(es)"
        what += " (--batches)"
    else:
        what = f"the loop at {where} was ended by the {cut.budget} budget"
        what += f" after {cut.count} {cut.unit}"
    return (
        f"**Cut short by a budget**: {what} while this was made; a full run may give other "
        "values, or another shape."
    )


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_SHAPE_CHARS else text[: LABEL_SHAPE_CHARS - 1] + "…"


def hover_markdown(name: NameRecord, run: RunOfRecord) -> str:
    parts = [_seen_markdown(name.name, seen) for seen in name.seen]
    if name.more:
        least = "at least " if name.more >= MORE_COUNTED else ""
        parts.append(f"and {least}{name.more} more distinct value(s), counted, not kept")
    if name.partial:
        parts.append(PARTIAL_WORDS.get(name.partial, "The run may have bound other values."))
    times = "once" if name.times == 1 else f"{name.times} times"
    started = run.started.replace("T", " ")[:16]
    parts.append(
        f"Looked at {times} in the first passes of quick-dev run `{run.run_id}` "
        f"(started {started} UTC)"
    )
    return "\n\n---\n\n".join(parts[:-1]) + "\n\n" + parts[-1]


def _seen_markdown(name: str, seen: Seen) -> str:
    value = seen.value
    text = tensor_text(value) if isinstance(value, TensorFacts) else shape_text(value)
    phases = ", ".join(PHASE_WORDS.get(p, p) for p in seen.phases)
    lines = [f"`{name}: {text}` — {phases}"]
    if seen.cut is not None:
        lines.append(cut_words(seen.cut))
    if isinstance(value, TensorFacts):
        stats = _stats(value)
        if stats:
            lines.append(stats)
    return "  \n".join(lines)


def _stats(facts: TensorFacts) -> str:
    parts = []
    if facts.min is not None and facts.max is not None and facts.mean is not None:
        parts += [f"min {facts.min:.4g}", f"max {facts.max:.4g}", f"mean {facts.mean:.4g}"]
    for label, count in (("NaN", facts.nan), ("Inf", facts.inf)):
        if count is not None:
            parts.append(f"**{label} {count}**" if count else f"{label} 0")
    if not parts and facts.layout == "strided":
        return "values not read (too large, or not readable here)"
    return " · ".join(parts)
