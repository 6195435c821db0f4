"""faiss's index of a shared copy, written with its lists in a file every process maps:
the same rows and scores as the index in memory, filtered or not."""

import faiss
import numpy as np
import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory import ann as ann_memory
from citewell.stores.memory.ann import untrained_index
from citewell.stores.memory.ann_file import INDEX_FILE, LISTS_FILE, read_index, write_index


def filled(rows: int, dimension: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(rows, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = untrained_index(rows, dimension, VectorIndexPolicy())
    index.train(vectors[: rows // 2])
    index.add(vectors)
    return vectors, index


def searched(index, queries, k=40, allowed=None):
    params = faiss.SearchParametersIVF()
    params.nprobe = 12
    if allowed is not None:
        bits = np.packbits(allowed, bitorder="little")
        params.sel = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bits))
    return index.search(queries, k, params=params)


# 33 dimensions: an odd number of 4-bit codes, which faiss pads to an even one in a block
@pytest.mark.parametrize("dimension", [32, 33])
def test_the_mapped_index_finds_what_the_index_in_memory_finds(tmp_path, dimension):
    vectors, index = filled(9_000, dimension)
    queries = vectors[:25] + 0.05
    scores, rows = searched(index, queries)
    allowed = np.random.default_rng(1).random(len(vectors)) < 0.3
    kept_scores, kept_rows = searched(index, queries, allowed=allowed)
    write_index(index, tmp_path)
    mapped = read_index(tmp_path)
    lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(mapped).invlists)
    assert isinstance(lists, faiss.OnDiskInvertedLists) and lists.read_only
    assert mapped.ntotal == len(vectors)
    again_scores, again_rows = searched(mapped, queries)
    assert np.array_equal(again_rows, rows) and np.array_equal(again_scores, scores)
    again_scores, again_rows = searched(mapped, queries, allowed=allowed)
    assert np.array_equal(again_rows, kept_rows) and np.array_equal(again_scores, kept_scores)
    assert all(allowed[row] for row in again_rows.ravel() if row >= 0)


def test_lists_are_read_from_the_directory_the_copy_was_moved_to(tmp_path):
    _, index = filled(5_000, 16)
    written = tmp_path / ".building-v3"
    written.mkdir()
    write_index(index, written)
    moved = written.rename(tmp_path / "v3")
    mapped = read_index(moved)
    lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(mapped).invlists)
    assert lists.filename == str(moved / LISTS_FILE)
    assert mapped.search(np.ones((1, 16), dtype=np.float32), 5)[1].min() >= 0


def test_an_older_copy_keeps_its_lists_in_the_index_file(tmp_path):
    vectors, index = filled(5_000, 16)
    faiss.write_index(index, str(tmp_path / INDEX_FILE))  # the layout of format 3: one file
    found = read_index(tmp_path)
    lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(found).invlists)
    assert not isinstance(lists, faiss.OnDiskInvertedLists)
    assert np.array_equal(found.search(vectors[:3], 5)[1], index.search(vectors[:3], 5)[1])
    assert read_index(tmp_path / "absent") is None


def test_the_minimum_index_rows_are_enough(tmp_path):
    # the smallest table given an index: partitions of 64 rows, some lists short of a block
    _, index = filled(ann_memory.MIN_TRAIN_ROWS, 8)
    queries = np.random.default_rng(2).normal(size=(10, 8)).astype(np.float32)
    expected = searched(index, queries, k=20)[1]
    write_index(index, tmp_path)
    assert np.array_equal(searched(read_index(tmp_path), queries, k=20)[1], expected)
