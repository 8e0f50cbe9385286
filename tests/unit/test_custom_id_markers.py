"""Chunk markers in custom_ids: every id of a chunk proves the chunk, and caller ids still come back unchanged."""

from batch_gateway.models.ids import (
    CUSTOM_ID_RE,
    carries_marker,
    is_mapped,
    marked_custom_id,
    new_id_marker,
    unmarked,
)


def test_a_caller_id_that_fits_beside_the_marker_travels_unmapped_and_comes_back_unchanged():
    marker = new_id_marker()
    for caller_id in ("q1", "x" * 55):
        custom_id = marked_custom_id(caller_id, 7, marker)
        assert CUSTOM_ID_RE.fullmatch(custom_id) and carries_marker(custom_id, marker)
        assert unmarked(custom_id, marker) == caller_id and not is_mapped(unmarked(custom_id, marker))


def test_an_id_too_long_for_the_marker_or_unsafe_or_reserved_is_mapped_by_position():
    marker = new_id_marker()
    for caller_id in ("x" * 56, "x" * 64, "with space", "bgw-3"):
        custom_id = marked_custom_id(caller_id, 12, marker)
        assert CUSTOM_ID_RE.fullmatch(custom_id) and len(custom_id) <= 64
        assert unmarked(custom_id, marker) == "bgw-12" and is_mapped(unmarked(custom_id, marker))


def test_markers_are_unique_per_chunk_and_another_chunks_ids_do_not_carry_ours():
    markers = {new_id_marker() for _ in range(1000)}
    assert len(markers) == 1000
    a, b = sorted(markers)[:2]
    assert not carries_marker(marked_custom_id("q1", 0, b), a)
    assert unmarked("q1", a) == "q1" and unmarked("q1", None) == "q1"
