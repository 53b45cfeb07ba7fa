"""What the CUDA caching allocator makes of a step's allocations, replayed in order.

``torch.cuda.max_memory_allocated`` counts blocks, not tensors: sizes round up to 512 B,
and a block carved from a cached segment is kept whole when the rest is too small to
split off. ``max_memory_reserved`` counts segments: 2 MiB ones for requests up to 1 MiB,
20 MiB ones up to 10 MiB, larger requests rounded up to 2 MiB; freed blocks stay cached
and are reused best-fit, so fragmentation shows. This follows the allocator's published
rules (c10/cuda/CUDACachingAllocator.cpp) for one stream and no ``empty_cache``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20  # requests up to this come from the small pool
SMALL_SEGMENT = 2 << 20
LARGE_SEGMENT = 20 << 20  # requests under MIN_LARGE_ALLOC share a segment of this size
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20


def block_size(size: int) -> int:
    """A request's size as the allocator rounds it (and MemTracker counts it on CUDA)."""
    return MIN_BLOCK if size < MIN_BLOCK else -(-size // MIN_BLOCK) * MIN_BLOCK


def segment_size(size: int) -> int:
    if size <= SMALL_SIZE:
        return SMALL_SEGMENT
    if size < MIN_LARGE_ALLOC:
        return LARGE_SEGMENT
    return -(-size // ROUND_LARGE) * ROUND_LARGE


@dataclass
class _Block:
    segment: int
    offset: int
    size: int
    free: bool = True


@dataclass
class _Segment:
    small: bool
    size: int
    blocks: list[_Block] = field(default_factory=list)  # in address order


class CachingAllocator:
    """Replays allocations and frees; keeps the peaks the allocator's statistics report."""

    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        # Free blocks per pool, sorted best-fit first: (size, segment, offset).
        self._free: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}
        self._live: dict[int, _Block] = {}
        self.allocated = 0
        self.reserved = 0
        self.peak_allocated = 0
        self.peak_reserved = 0

    def malloc(self, key: int, size: int) -> None:
        size = block_size(size)
        small = size <= SMALL_SIZE
        pool = self._free[small]
        at = bisect.bisect_left(pool, (size, -1, -1))
        if at == len(pool):
            self._new_segment(small, segment_size(size))
            at = bisect.bisect_left(pool, (size, -1, -1))
        _, seg_index, offset = pool.pop(at)
        segment = self._segments[seg_index]
        index = next(i for i, b in enumerate(segment.blocks) if b.offset == offset)
        block = segment.blocks[index]
        rest = block.size - size
        # The allocator splits off the rest only when it is worth keeping apart.
        if rest >= MIN_BLOCK if small else rest > SMALL_SIZE:
            remainder = _Block(seg_index, offset + size, rest)
            block.size = size
            segment.blocks.insert(index + 1, remainder)
            bisect.insort(pool, (rest, seg_index, remainder.offset))
        block.free = False
        self._live[key] = block
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)

    def free(self, key: int) -> None:
        block = self._live.pop(key, None)
        if block is None:
            return
        self.allocated -= block.size
        segment = self._segments[block.segment]
        pool = self._free[segment.small]
        block.free = True
        index = segment.blocks.index(block)
        # Merge with free neighbours, as the allocator does when a block is returned.
        for neighbour_index in (index + 1, index - 1):
            if 0 <= neighbour_index < len(segment.blocks):
                neighbour = segment.blocks[neighbour_index]
                if neighbour.free and neighbour is not block:
                    pool.remove((neighbour.size, block.segment, neighbour.offset))
                    block.offset = min(block.offset, neighbour.offset)
                    block.size += neighbour.size
                    segment.blocks.remove(neighbour)
        bisect.insort(pool, (block.size, block.segment, block.offset))

    def _new_segment(self, small: bool, size: int) -> None:
        index = len(self._segments)
        self._segments.append(_Segment(small, size, [_Block(index, 0, size)]))
        bisect.insort(self._free[small], (size, index, 0))
        self.reserved += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
