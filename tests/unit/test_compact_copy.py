"""A big table's copy as files (memory/shared_copy.py): int8 codes scanned, fine codes read
for close scores (memory/vectors.py), ids, files and terms found through hashed lookups
(memory/keys.py). Mapped, it answers as the copy it was written from."""

import contextlib
import json
import mmap
import shutil

import numpy as np
import pyarrow as pa
import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory import shared_copy
from citewell.stores.memory.keys import FileRows, KeyIndex, take_rows
from citewell.stores.memory.shared_copy import SharedCopies, read_copy, readable, write_copy
from citewell.stores.memory.snapshot import CopyPutOff, TableScan, TableSnapshot
from citewell.stores.memory.vectors import QuantizedVectors, fine_codes, int8_codes
from citewell.types import ChunkFilter

DIM = 32
WORDS = [f"w{n}" for n in range(300)]


def table(count: int, seed: int = 3) -> pa.Table:
    """``count`` rows, four to a file, in KB "all" and every tenth also in "few"."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    terms = [" ".join(rng.choice(WORDS, size=rng.integers(4, 30))) for _ in range(count)]
    return pa.table({
        "id": [f"chunk-{n}" for n in range(count)],
        "file_id": [f"file-{n // 4}" for n in range(count)],
        "kb_ids": [["all", "few"] if n % 10 == 0 else ["all"] for n in range(count)],
        "idx": pa.array([n % 4 for n in range(count)], pa.int32()), "text": terms,
        "start": [0] * count, "end": [1] * count, "page": pa.array([None] * count, pa.int32()),
        "headings": [[] for _ in range(count)], "file_name": ["x.md"] * count,
        "terms": terms, "vector": list(vectors),
    })  # fmt: skip


def test_a_key_index_finds_each_string_and_no_other():
    index = KeyIndex.build([f"id-{n}" for n in range(1000)])
    found = index.find(["id-7", "id-999", "nope", "id-7"])
    assert found.tolist() == [7, 999, -1, 7]
    assert index.get("id-0") == 0 and "id-500" in index and "id-1000" not in index
    assert index.at([3, 1]) == ["id-3", "id-1"] and list(index)[:2] == ["id-0", "id-1"]


def test_strings_sharing_a_hash_are_told_apart_by_the_string():
    # Two strings forced onto one hash: the lookup compares the strings themselves.
    keys = pa.array(["left", "right", "other"])
    hashes = np.array([5, 5, 9], dtype=np.uint64)
    index = KeyIndex(keys, hashes, np.array([0, 1, 2], dtype=np.int32))
    assert index._position("right", np.uint64(5), 0) == 1
    assert index._position("left", np.uint64(5), 0) == 0
    assert index._position("absent", np.uint64(5), 0) == -1


def test_file_rows_mask_the_rows_of_the_files_asked_for():
    files = FileRows.build(pa.array(["a", "b", "a", "c", None]))
    assert files.mask(["a", "zzz"]).tolist() == [True, False, True, False, False]
    assert not files.mask([]).any()


def test_int8_codes_stay_within_a_scale_of_each_value_and_fine_codes_within_a_254th(tmp_path):
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((500, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix[3] = 0  # a zero row keeps a usable scale
    codes, scales = int8_codes(matrix)
    assert np.abs(codes.astype(np.float32) * scales[:, None] - matrix).max() <= scales.max() / 2
    np.save(tmp_path / "fine.npy", fine_codes(matrix, codes, scales))
    vectors = QuantizedVectors(codes, scales, tmp_path / "fine.npy")
    rows = np.array([499, 2, 3, 250])
    error = np.abs(vectors.take(rows) - matrix[rows])
    assert (error <= scales[rows, None] / 508 + 1e-7).all()  # half a 254th of a scale
    assert vectors.take(np.array([3])).tolist() == [[0.0] * DIM]
    query = matrix[10]
    # 16-bit codes: scores within about 1e-5 of float32's (a bound of 1e-4 for any row)
    assert vectors.exact(rows, query) == pytest.approx(matrix[rows] @ query, abs=1e-4)
    assert vectors.rough(rows, query) == pytest.approx(matrix[rows] @ query, abs=0.05)
    assert vectors.all(query) == pytest.approx(matrix @ query, abs=1e-4)
    assert np.abs(vectors.all(query) - matrix @ query).mean() < 2e-5


@pytest.mark.parametrize(
    "where",
    [ChunkFilter(), ChunkFilter(kb_ids=("few",)), ChunkFilter(file_ids=("file-3", "file-900"))],
)
def test_a_mapped_copy_answers_as_the_copy_it_was_written_from(tmp_path, where):
    data = table(6000)
    policy = VectorIndexPolicy()
    built = TableSnapshot.from_arrow(4, data, DIM, policy)
    assert built.ann is not None and built.ann.index is not None  # past MIN_TRAIN_ROWS
    write_copy(TableScan.of(4, data, batch_rows=1000), tmp_path / "v4", policy)
    mapped = read_copy(tmp_path / "v4", policy)
    assert isinstance(mapped.vectors, QuantizedVectors)
    assert isinstance(mapped.keys.hashes.base, mmap.mmap)  # the file's pages, shared
    vectors = data["vector"].combine_chunks().flatten().to_numpy().reshape(-1, DIM)
    for probe in (vectors[0], vectors[2999], -vectors[17]):
        mine, theirs = mapped.search(probe, 8, where), built.search(probe, 8, where)
        assert [h[0] for h in mine] == [h[0] for h in theirs]
        assert [h[1] for h in mine] == pytest.approx([h[1] for h in theirs], abs=1e-4)
    for words in (["w1"], ["w2", "w250", "w250"], ["absent"]):
        mine, theirs = mapped.keyword_search(words, 8, where), built.keyword_search(words, 8, where)
        # the copy's impacts are float16: scores within 0.1 %, the same rows
        assert {h[0] for h in mine[:5]} == {h[0] for h in theirs[:5]}
        assert [h[1] for h in mine] == pytest.approx([h[1] for h in theirs], rel=1e-3)
    assert mapped.get(["chunk-12", "nope"]).keys() == {"chunk-12"}
    assert mapped.row_of("chunk-5999") == 5999 and mapped.row_of("chunk-6000") is None


def test_a_copy_in_an_older_layout_is_not_read(tmp_path):
    write_copy(TableScan.of(1, table(100)), tmp_path / "v1", VectorIndexPolicy())
    assert readable(tmp_path / "v1")
    meta = json.loads((tmp_path / "v1" / "meta.json").read_text())
    del meta["format"]
    (tmp_path / "v1" / "meta.json").write_text(json.dumps(meta))
    assert not readable(tmp_path / "v1") and not readable(tmp_path / "v2")


def test_file_ids_sharing_a_hash_leave_the_table_without_a_copy(tmp_path, monkeypatch):
    # Every string onto one hash: file numbers could not tell two files apart.
    from citewell.errors import StoreError
    from citewell.stores.memory import copy_writer

    monkeypatch.setattr(copy_writer, "key_hashes", lambda keys: np.zeros(len(keys), np.uint64))
    with pytest.raises(StoreError, match="share a hash"):
        write_copy(TableScan.of(1, table(100)), tmp_path / "v1", VectorIndexPolicy())
    assert not (tmp_path / "v1").exists() and not list(tmp_path.glob(".building-*"))


def test_rows_are_taken_chunk_by_chunk_in_the_order_asked():
    data = table(50)
    chunked = pa.Table.from_batches(data.to_batches(max_chunksize=7))
    assert len(chunked.to_batches()) > 1
    rows = [49, 0, 13, 13, 6, 7]
    assert take_rows(chunked, rows).to_pylist() == data.take(rows).to_pylist()
    column = chunked["id"]
    assert take_rows(column, rows).to_pylist() == [f"chunk-{n}" for n in rows]
    assert take_rows(data, []).num_rows == 0


def test_asking_for_every_kb_of_a_big_copy_builds_no_mask(tmp_path, monkeypatch):
    from citewell.stores.memory import snapshot

    monkeypatch.setattr(snapshot, "FULL_MASK_ROWS", 1000)
    data = table(3000).set_column(2, "kb_ids", pa.array([[f"kb{n % 3}"] for n in range(3000)]))
    write_copy(TableScan.of(2, data, batch_rows=1000), tmp_path / "v2", VectorIndexPolicy())
    copy = read_copy(tmp_path / "v2", VectorIndexPolicy())
    every = ChunkFilter(kb_ids=("kb0", "kb2", "kb1", "elsewhere"))
    built: list[tuple[str, ...]] = []
    make = TableSnapshot._kb_mask

    def counted(self, kb_ids):
        built.append(tuple(kb_ids))
        return make(self, kb_ids)

    monkeypatch.setattr(TableSnapshot, "_kb_mask", counted)
    assert copy.mask(every) is None and copy.mask(every) is None
    assert len(built) == 1  # once, to learn that the KBs hold every row
    assert copy.mask(ChunkFilter(kb_ids=("kb0", "kb1"))).sum() == 2000  # not every KB
    keep = np.ones(3000, dtype=bool)
    keep[5] = False  # rows changed since the copy: the mask is made, within them
    assert copy.mask(every, keep).sum() == 2999
    vector = data["vector"][7].as_py()
    assert copy.search(vector, 5, every) == copy.search(vector, 5, ChunkFilter())
    assert copy.keyword_search(["w3"], 5, every) == copy.keyword_search(["w3"], 5, ChunkFilter())


class ScannedTable:
    """A SnapshotSource of a table held in memory, for SharedCopies."""

    def __init__(self, data: pa.Table, version: int = 7) -> None:
        self.data, self.at = data, version

    def version(self) -> int:
        return self.at

    @contextlib.contextmanager
    def scan(self):
        yield TableScan.of(self.at, self.data, batch_rows=1000)


def test_a_copy_is_put_off_while_the_disk_lacks_room_for_it(tmp_path, monkeypatch):
    copies = SharedCopies(ScannedTable(table(5000)), tmp_path / "copies")
    free = [5000 * shared_copy.FIRST_COPY_ROW_BYTES]  # short of the 10 % margin
    monkeypatch.setattr(
        shared_copy.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(0, 0, free[0])
    )
    with pytest.raises(CopyPutOff, match=r"needs about \d+ MB of disk"):
        copies.load(VectorIndexPolicy())
    assert not copies.kept() and not list((tmp_path / "copies").glob("*v7*"))  # nothing begun
    free[0] *= 2
    assert copies.load(VectorIndexPolicy()).count == 5000
    written = sum(f.stat().st_size for f in (tmp_path / "copies" / "v7").iterdir())
    assert copies._row_bytes() == written / 5000  # the next copy is sized by this one
