"""Which frames a trace keeps once Quickdev's own are hidden, on stacks shaped like a job's."""

from __future__ import annotations

from typing import Any

from quickdev.profiling.own_frames import Kind, frame_kind, hide_own_frames


def kind(name: str) -> Kind:
    if name.startswith("quickdev/"):
        return "ours"
    return "user" if name.startswith("train.py") else "library"


def trace(*frames: tuple[int, int | None, str, int]) -> dict[str, Any]:
    """(id, parent id, name, thread) per frame, plus one operator."""
    events: list[dict[str, Any]] = [
        {
            "ph": "X",
            "cat": "python_function",
            "name": name,
            "tid": tid,
            "args": {"Python id": fid, "Python parent id": parent},
        }
        for fid, parent, name, tid in frames
    ]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "tid": 1, "args": {}})
    return {"traceEvents": events}


def kept(t: dict[str, Any]) -> dict[str, Any]:
    """name -> the name of its parent as kept (None at the top)."""
    frames = [e for e in t["traceEvents"] if e["cat"] == "python_function"]
    names = {e["args"]["Python id"]: e["name"] for e in frames}
    return {e["name"]: names.get(e["args"]["Python parent id"]) for e in frames}


def test_wrappers_go_and_what_they_wrap_hangs_from_the_users_line() -> None:
    """As if the script ran alone: the user's line calls torch's backward and the
    DataLoader; our bookkeeping (JSON) is gone with the frames of ours around it."""
    t = trace(
        (1, None, "train.py(60): main", 1),
        # next(loader) through our loader limit: the DataLoader leads to the user's dataset
        (2, 1, "quickdev/limits/loaders.py(97): _limited", 1),
        (3, 2, "torch/utils/data/dataloader.py(700): __next__", 1),
        (4, 3, "train.py(20): __getitem__", 1),
        (5, 3, "torch/utils/data/_utils/collate.py(300): default_collate", 1),
        # loss.backward() through our step limit, and our bookkeeping beside it
        (6, 1, "quickdev/limits/steps.py(102): backward", 1),
        (7, 6, "torch/_tensor.py(566): backward", 1),
        (8, 6, "quickdev/events.py(95): _safely", 1),
        (9, 8, "json/encoder.py(200): encode", 1),
        # a user's call into torch with no wrapper of ours: untouched
        (10, 1, "torch/nn/modules/module.py(1775): _call_impl", 1),
        (11, 10, "torch/nn/modules/linear.py(130): forward", 1),
    )
    assert hide_own_frames(t, kind) == 4
    assert kept(t) == {
        "train.py(60): main": None,
        "torch/_tensor.py(566): backward": "train.py(60): main",
        "torch/utils/data/dataloader.py(700): __next__": "train.py(60): main",
        "train.py(20): __getitem__": "torch/utils/data/dataloader.py(700): __next__",
        "torch/utils/data/_utils/collate.py(300): default_collate": (
            "torch/utils/data/dataloader.py(700): __next__"
        ),
        "torch/nn/modules/module.py(1775): _call_impl": "train.py(60): main",
        "torch/nn/modules/linear.py(130): forward": "torch/nn/modules/module.py(1775): _call_impl",
    }
    assert [e["name"] for e in t["traceEvents"] if e["cat"] == "cpu_op"] == ["aten::addmm"]


def test_a_thread_of_ours_goes_whole_and_a_library_thread_stays() -> None:
    t = trace(
        (1, None, "train.py(60): main", 1),
        (2, None, "threading.py(1002): _bootstrap", 2),
        (3, 2, "quickdev/profiling/sampler.py(137): _run", 2),
        (4, 3, "threading.py(629): wait", 2),
        (5, None, "threading.py(1002): _bootstrap", 3),  # e.g. a pin-memory thread
        (6, 5, "torch/utils/data/_utils/pin_memory.py(50): _pin_memory_loop", 3),
    )
    hide_own_frames(t, kind)
    assert {e["tid"] for e in t["traceEvents"] if e["cat"] == "python_function"} == {1, 3}


def test_frame_names_resolve_against_the_job_path() -> None:
    assert frame_kind("quickdev/limits/steps.py(102): backward") == "ours"
    assert frame_kind("torch/_tensor.py(566): backward") == "library"
    assert frame_kind("<built-in method item of Tensor object at 0x7f>") == "library"
    assert frame_kind("no/such/file.py(1): f") == "library"
