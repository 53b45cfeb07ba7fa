"""The caching allocator's rules, replayed: what max_memory_allocated/reserved would say."""

from __future__ import annotations

from quickdev.forecast.allocator import CachingAllocator, block_size

MB = 1 << 20


def test_sizes_round_up_to_512_bytes() -> None:
    assert [block_size(n) for n in (1, 512, 513, 1000)] == [512, 512, 1024, 1024]


def test_small_requests_share_a_two_megabyte_segment() -> None:
    allocator = CachingAllocator()
    allocator.malloc(1, MB)
    allocator.malloc(2, MB)
    assert allocator.peak_reserved == 2 * MB
    assert allocator.peak_allocated == 2 * MB
    allocator.malloc(3, 512)
    assert allocator.peak_reserved == 4 * MB  # the first segment is full


def test_mid_sized_requests_take_a_twenty_megabyte_segment_and_large_ones_their_own() -> None:
    allocator = CachingAllocator()
    allocator.malloc(1, 5 * MB)
    allocator.malloc(2, 5 * MB)
    assert allocator.peak_reserved == 20 * MB
    allocator.malloc(3, 11 * MB + 1)
    assert allocator.peak_reserved == 20 * MB + 12 * MB


def test_a_freed_block_is_reused_without_new_memory() -> None:
    allocator = CachingAllocator()
    allocator.malloc(1, 64 * MB)
    allocator.free(1)
    allocator.malloc(2, 64 * MB)
    assert allocator.peak_reserved == 64 * MB
    assert allocator.allocated == 64 * MB


def test_a_remainder_too_small_to_split_counts_as_allocated() -> None:
    allocator = CachingAllocator()
    allocator.malloc(1, 64 * MB)
    allocator.free(1)
    allocator.malloc(2, 63 * MB + MB // 2)  # the rest (0.5 MB) stays with the block
    assert allocator.allocated == 64 * MB


def test_fragmented_free_blocks_do_not_serve_a_larger_request() -> None:
    allocator = CachingAllocator()
    for key in range(3):
        allocator.malloc(key, 30 * MB)
    allocator.free(0)
    allocator.free(2)  # 60 MB free in all, in two holes of 30 MB
    allocator.malloc(3, 40 * MB)
    assert allocator.peak_reserved == 130 * MB
    assert allocator.peak_allocated == 90 * MB


def test_freed_neighbours_merge() -> None:
    allocator = CachingAllocator()
    allocator.malloc(1, 64 * MB)
    allocator.free(1)
    allocator.malloc(2, 30 * MB)
    allocator.malloc(3, 30 * MB)
    allocator.free(2)
    allocator.free(3)
    allocator.malloc(4, 64 * MB)  # the two halves merged back into the segment
    assert allocator.peak_reserved == 64 * MB
