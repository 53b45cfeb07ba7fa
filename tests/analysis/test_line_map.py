"""Where a recorded file's lines are after edits (``analysis.line_map``): following each
edit from the version before (``follow_edit``) places every line that occurs once where
mapping the whole file from scratch (``map_lines``) does (a repeated line, a blank one,
may go to either of its equals), and an undone edit brings its lines back."""

from __future__ import annotations

import random
from collections import Counter

from quickdev.analysis.line_map import follow_edit, map_lines
from quickdev.analysis.source import line_hashes


def test_following_random_edits_agrees_with_mapping_the_whole_file() -> None:
    rng = random.Random(3)
    recorded = "".join(
        f"def f{n}(x):\n    y = x * {n}\n\n    return y + {n}\n\n" for n in range(300)
    )
    record = line_hashes(recorded)
    text, where = recorded, map_lines(record, record)
    for round_ in range(200):
        lines = text.splitlines(keepends=True)
        at = rng.randrange(len(lines))
        kind = rng.choice(["type", "insert", "delete", "join", "blank"])
        if kind == "type":  # a few characters typed inside a line
            cut = rng.randrange(len(lines[at]))
            lines[at] = lines[at][:cut] + f"z{round_}" + lines[at][cut:]
        elif kind == "insert":
            lines[at:at] = [f"    new{round_} = {round_}\n"] * rng.randint(1, 3)
        elif kind == "delete":
            del lines[at : at + rng.randint(1, 4)]
        elif kind == "join" and at + 1 < len(lines):
            lines[at : at + 2] = [lines[at].rstrip("\n") + lines[at + 1]]
        else:
            lines.insert(at, "\n")
        new = "".join(lines)
        followed = follow_edit(where, record, text, new)
        assert followed is not None
        hashes = line_hashes(new)
        placed = [(old, now) for old, now in enumerate(followed) if now >= 0]
        assert all(record[old] == hashes[now] for old, now in placed)  # the same text
        assert [now for _, now in placed] == sorted({now for _, now in placed})  # in order
        in_record, in_new = Counter(record), Counter(hashes)
        once = {h for h in record if in_record[h] == 1 and in_new[h] == 1}
        scratch = map_lines(record, hashes)
        assert [n for o, n in enumerate(followed) if record[o] in once] == [
            n for o, n in enumerate(scratch) if record[o] in once
        ], (round_, kind, at)
        text, where = new, followed


def test_an_undone_edit_brings_its_lines_back() -> None:
    recorded = "a = 1\nb = 2\nc = 3\nd = 4\n"
    record = line_hashes(recorded)
    where = map_lines(record, record)
    edited = "a = 1\nb = 20\nc = 3\nd = 4\n"
    after_edit = follow_edit(where, record, recorded, edited)
    assert after_edit == [0, -1, 2, 3]
    assert follow_edit(after_edit, record, edited, recorded) == [0, 1, 2, 3]
    # A last line without its line break, edited and given one.
    assert follow_edit([0, 1, 2, 3], record, recorded, recorded + "e = 5") == [0, 1, 2, 3]
    assert follow_edit([0, 1, 2, 3], record, recorded, "x = 0\n" + recorded) == [1, 2, 3, 4]


def test_other_line_breaks_are_left_to_the_whole_file_mapping() -> None:
    assert follow_edit([0], line_hashes("a\n"), "a\n", "a\r\nb\r\n") is None
    assert follow_edit([0], line_hashes("a\n"), "a\n", "a\x0cb\n") is None
