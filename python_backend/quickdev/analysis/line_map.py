"""Where each line of an earlier version of a file is in its current version.

Lines are compared by their text (``source.line_hash``): a line that moved (an edit above
it) is found where it went; a changed or deleted line is not found. Edits are usually in
one place, so the common head and tail are matched first, in one pass each; the middle
goes to ``difflib`` while it is small, and to a patience-style match (lines that occur once
on each side, in order, extended to their equal neighbours) when it is large.
"""

from __future__ import annotations

import difflib
import sys
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

from quickdev.analysis.source import line_hash, only_newlines, split_lines

# Above this product of the two middles' lengths, difflib's quadratic worst case is avoided.
DIFFLIB_MAX_CELLS = 1_000_000


def map_lines(old: Sequence[int], new: Sequence[int]) -> list[int]:
    """For each line of ``old`` (0-based), its line in ``new``, or -1 where it is gone."""
    n, m = len(old), len(new)
    result = [-1] * n
    head = 0
    while head < n and head < m and old[head] == new[head]:
        result[head] = head
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and old[n - 1 - tail] == new[m - 1 - tail]:
        result[n - 1 - tail] = m - 1 - tail
        tail += 1
    a, b = old[head : n - tail], new[head : m - tail]
    if a and b:
        pairs = _small_middle(a, b) if len(a) * len(b) <= DIFFLIB_MAX_CELLS else _large_middle(a, b)
        for i, j in pairs:
            result[head + i] = head + j
    return result


def _small_middle(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [
        (block.a + k, block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    ]


def _large_middle(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    in_a, in_b = Counter(a), Counter(b)
    where_b = {h: j for j, h in enumerate(b) if in_b[h] == 1}
    unique = [(i, where_b[h]) for i, h in enumerate(a) if in_a[h] == 1 and h in where_b]
    anchors = _increasing(unique)
    matched: dict[int, int] = dict(anchors)
    used_b = set(matched.values())
    # Extend each anchor to the equal lines around it (a blank line, a repeated ``)``).
    for i, j in anchors:
        for step in (-1, 1):
            x, y = i + step, j + step
            while 0 <= x < len(a) and 0 <= y < len(b) and x not in matched and y not in used_b:
                if a[x] != b[y]:
                    break
                matched[x] = y
                used_b.add(y)
                x, y = x + step, y + step
    return sorted(matched.items())


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by their first item) whose second items rise."""
    tails: list[int] = []  # the smallest second item ending a run of each length
    ends: list[int] = []  # index into pairs of that run's last pair
    before: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        length = bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[length] = j
            ends[length] = index
        before[index] = ends[length - 1] if length else -1
    run: list[tuple[int, int]] = []
    index = ends[-1] if ends else -1
    while index != -1:
        run.append(pairs[index])
        index = before[index]
    return run[::-1]


def follow_edit(
    where: Sequence[int], old_lines: Sequence[int], old_text: str, new_text: str
) -> list[int] | None:
    """``where`` (each line of an earlier version -> its line in ``old_text``, or -1) moved
    on to ``new_text``, looking only at the lines the edit changed: lines before it keep
    their place, lines after it shift by the lines it added, and the earlier version's
    lines around the edit (``old_lines``: their hashes) are matched against the edited
    lines alone. What ``map_lines`` would give from scratch (a repeated line may go to
    another of its equals), for the cost of the edit rather than of the file. None where
    the texts hold line breaks other than ``\n`` (the caller maps the whole file)."""
    if not (only_newlines(old_text) and only_newlines(new_text)):
        return None
    start, old_end, new_end = _edited_lines(old_text, new_text)
    shift = new_end - old_end
    # The earlier version's lines after the last one placed before the edit, up to the
    # first one placed after it: placed inside the edit, or not placed at all.
    low = first_placed_at(where, start)
    high = first_placed_at(where, old_end)
    while high < len(where) and where[high] < 0:
        high += 1
    result = list(where[:low])
    if low < high:
        new_hashes = [line_hash(line) for line in split_lines(new_text)[start:new_end]]
        found = map_lines(old_lines[low:high], new_hashes)
        result.extend(start + line if line >= 0 else -1 for line in found)
    tail = where[high:]
    result.extend([line + shift if line >= 0 else -1 for line in tail] if shift else tail)
    return result


def first_placed_at(where: Sequence[int], line: int) -> int:
    """The first index whose entry, or the next placed one after it, is at ``line`` or
    later (``where``'s placed entries rise: a binary search)."""

    def next_placed(index: int) -> int:
        while index < len(where) and where[index] < 0:
            index += 1
        return where[index] if index < len(where) else sys.maxsize

    return bisect_left(range(len(where)), line, key=next_placed)


def _edited_lines(old: str, new: str) -> tuple[int, int, int]:
    """(first line that differs, the line after the changed ones in ``old``, in ``new``);
    lines from the second and third on are the same, in both."""
    prefix = _common_prefix(old, new)
    start_char = old.rfind("\n", 0, prefix) + 1
    start = old.count("\n", 0, start_char)
    suffix = _common_prefix(old[prefix:][::-1], new[prefix:][::-1])  # not into the prefix
    old_total, new_total = _line_count(old), _line_count(new)
    end_char, new_end_char = len(old) - suffix, len(new) - suffix
    if not (_line_starts(old, end_char) and _line_starts(new, new_end_char)):
        # Mid-line in one of them: the lines the same in both begin after that line.
        found = old.find("\n", end_char)
        end_char = len(old) if found < 0 else found + 1
    if end_char >= len(old):
        return start, old_total, new_total
    after = old.count("\n", end_char)  # whole lines after the edit, the same in both
    after += 0 if old.endswith("\n") else 1
    return start, old_total - after, new_total - after


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix: a binary search of slice comparisons (each in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _line_starts(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] == "\n"


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
