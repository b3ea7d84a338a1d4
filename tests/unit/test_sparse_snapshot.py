"""How the sparse leg's in-memory postings are held (services/sparse/in_memory.py); that their answers
are the statement's: tests/integration/test_sparse_in_memory.py."""

from __future__ import annotations

import numpy as np

from services.sparse.in_memory import _Growing, _int4_count, _int4_values, _SharedStrings
from tribrid.stores.postgres import ChunkRow


def fresh(text: str) -> str:
    """An equal string that is another object, as each record's strings are."""
    return text[:1] + text[1:]


def row(chunk_id: str, file_path: str, symbol: str) -> ChunkRow:
    return ChunkRow(
        chunk_id, fresh("corpus"), fresh(file_path), 1, 2, fresh("python"), fresh("function"),
        symbol, "", "", 0, 0, fresh("{}"),
    )  # fmt: skip


def test_repeated_strings_are_shared_and_rows_unchanged() -> None:
    rows = [row("a", "pkg/one.py", "f"), row("b", "pkg/one.py", "g"), row("c", "pkg/two.py", "h")]
    assert rows[0].file_path is not rows[1].file_path
    kept = _SharedStrings()
    for each in rows:
        kept.append(each)
    shared = kept.rows
    assert shared == rows
    assert shared[0].file_path is shared[1].file_path
    assert shared[0].corpus_id is shared[2].corpus_id
    assert shared[0].language is shared[2].language
    assert shared[0].document_metadata is shared[2].document_metadata
    assert shared[0].file_path is not shared[2].file_path


def test_a_growing_array_keeps_every_value_in_order_and_widens_for_a_large_tf() -> None:
    rng = np.random.default_rng(3)
    parts = [rng.integers(0, 60_000, size=n, dtype=np.int32) for n in (5, 70_000, 1, 40_000)]
    kept = _Growing(np.uint16)
    for part in parts:
        kept.extend(part)
    small = kept.done()
    assert small.dtype == np.uint16  # every value fits 16 bits
    assert small.tolist() == np.concatenate(parts).tolist()  # past the first capacity, trimmed
    widened = _Growing(np.uint16)
    for part in (parts[0], np.array([65_536, 7], dtype=np.int32), parts[2]):
        widened.extend(part)
    assert widened.done().tolist() == [*parts[0].tolist(), 65_536, 7, *parts[2].tolist()]
    assert _Growing(np.int32).done().size == 0


def sent(values: list[int]) -> bytes:
    """array_send(values::int4[]) as PostgreSQL 15 writes it."""
    dims, flags, int4 = (1).to_bytes(4, "big"), bytes(4), (23).to_bytes(4, "big")
    header = dims + flags + int4 + len(values).to_bytes(4, "big") + (1).to_bytes(4, "big")
    return header + b"".join((4).to_bytes(4, "big") + v.to_bytes(4, "big", signed=True) for v in values)


def test_postgresqls_binary_int4_arrays_are_read_as_int32_one_after_the_other() -> None:
    batch = [{"pos": sent([1, 2, 300])}, {"pos": sent([-7])}, {"pos": sent([70_000, 5])}]
    assert sent([1, 2, 300]).hex() == (
        "000000010000000000000017000000030000000100000004000000010000000400000002000000040000012c"
    )  # PostgreSQL's own bytes for ARRAY[1, 2, 300]
    read = _int4_values(batch, "pos")  # type: ignore[arg-type]
    assert read.dtype == np.int32
    assert read.tolist() == [1, 2, 300, -7, 70_000, 5]
    assert [_int4_count(record["pos"]) for record in batch] == [3, 1, 2]
