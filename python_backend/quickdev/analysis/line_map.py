"""Where each line of an earlier version of a file is in its current version.

Lines are compared by their text (``source.line_hash``): a line that moved (an edit above
it) is found where it went; a changed or deleted line is not found. Edits are usually in
one place, so the common head and tail are matched first, in one pass each; the middle
goes to ``difflib`` while it is small, and to a patience-style match (lines that occur once
on each side, in order, extended to their equal neighbours) when it is large.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

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
