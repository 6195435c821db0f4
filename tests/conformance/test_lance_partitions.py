"""The vector index's IVF side done with faiss (stores/lance/partitions.py): centroids and
every row's partition computed here, the quantisation and index files left to Lance."""

from __future__ import annotations

import threading
from pathlib import Path

import faiss
import lance
import numpy as np
import pyarrow as pa
import pytest

from citewell.stores.lance import nearest
from citewell.stores.lance.partitions import (
    FaissThreads,
    create_ivf_sq,
    row_ids,
    write_assignments,
)

pytestmark = pytest.mark.conformance

DIM, CLUSTERS, ROWS = 32, 50, 5_000


@pytest.fixture(autouse=True)
def scratch(tmp_path, monkeypatch) -> Path:
    """Lance's shuffle files in the test's own folder, as scratch.py points TMPDIR for a
    store's build: Lance 9 leaves them behind, and /tmp would keep them."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def clustered(tmp_path, rows: int = ROWS) -> lance.LanceDataset:
    """Noisy copies of ``CLUSTERS`` random unit vectors (as benchmarks.million makes its
    rows), in fragments of 1,000 rows."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(CLUSTERS, DIM)).astype(np.float32)
    vectors = centres[np.arange(rows) % CLUSTERS] + rng.normal(0, 0.1, (rows, DIM))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    table = pa.table(
        {
            "id": pa.array([f"r{i}" for i in range(rows)]),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
        }
    )
    return lance.write_dataset(table, str(tmp_path / "rows.lance"), max_rows_per_file=1_000)


def options(partitions: int = 40) -> dict:
    return {"name": "vector_idx", "metric": "cosine", "replace": True,
            "num_partitions": partitions, "sample_rate": 64}  # fmt: skip


def recall_at_10(dataset: lance.LanceDataset, queries: int = 40) -> float:
    vectors = np.stack(dataset.to_table(columns=["vector"])["vector"].to_numpy(False))
    found = []
    for row in range(0, len(vectors), len(vectors) // queries):
        exact = set(np.argsort(-(vectors @ vectors[row]))[:10].tolist())
        ann = dataset.to_table(
            columns=["id"],
            nearest={"column": "vector", "q": vectors[row], "k": 10, "nprobes": 8},
            disable_scoring_autoprojection=True,
        )
        found.append(len({int(i[1:]) for i in ann["id"].to_pylist()} & exact) / 10)
    return float(np.mean(found))


@pytest.mark.parametrize("grouped", [False, True], ids=["every-centroid", "through-groups"])
def test_an_index_from_faiss_partitions_finds_what_lances_own_finds(
    tmp_path, scratch, caplog, monkeypatch, grouped
):
    if grouped:  # rows placed through groups of the centroids, as past 2,048 (nearest.py)
        monkeypatch.setattr(nearest, "GROUPED_FROM", 16)
    dataset, own = clustered(tmp_path / "faiss"), clustered(tmp_path / "lance")
    with caplog.at_level("INFO", logger="citewell.stores.lance.partitions"):
        create_ivf_sq(dataset, options())
    # Each step's time, for an operator's log (and the journal's breakdowns).
    assert "Vector index of 40 partitions: centroids" in caplog.text
    own.create_index("vector", "IVF_SQ", **options())
    dataset = lance.dataset(dataset.uri)
    stats = dataset.stats.index_stats("vector_idx")
    assert stats["index_type"] == "IVF_SQ" and stats["num_indexed_rows"] == ROWS
    assert len(stats["indices"][0]["partitions"]) == 40
    found = recall_at_10(dataset)
    assert found >= 0.85 and found >= recall_at_10(lance.dataset(own.uri)) - 0.03
    # The partitions' dataset went with the build (Lance's shuffles are scratch.py's).
    assert list(scratch.glob("citewell-*")) == []


def test_each_row_goes_to_its_nearest_centroid(tmp_path):
    dataset = clustered(tmp_path, rows=2_000)
    rng = np.random.default_rng(5)
    centroids = rng.normal(size=(10, DIM)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    written = lance.dataset(write_assignments(dataset, centroids, str(tmp_path / "p.lance")))
    assert len(written.get_fragments()) == 1  # the one file Lance reads
    assert len(written.get_fragments()[0].data_files()) == 1
    rows = written.to_table()
    vectors = dataset.to_table(columns=["vector"], with_row_id=True)
    matrix = np.stack(vectors["vector"].to_numpy(False))
    best = np.argmax(matrix @ centroids.T, axis=1)
    nearest = dict(zip(vectors["_rowid"].to_pylist(), best, strict=True))
    assert len(rows) == 2_000
    assert all(
        nearest[row] == partition
        for row, partition in zip(
            rows["row_id"].to_pylist(), rows["partition"].to_pylist(), strict=True
        )
    )


def test_later_rows_are_placed_by_the_same_centroids(tmp_path):
    """A delta of new rows (Lance's own assignment) lands where faiss would put them: the
    index stays searchable as it grows."""
    dataset = clustered(tmp_path)
    create_ivf_sq(dataset, options())
    more = clustered(tmp_path / "more", rows=1_000).to_table()
    more = more.set_column(0, "id", pa.array([f"r{i}" for i in range(ROWS, ROWS + 1_000)]))
    dataset = lance.write_dataset(more, dataset.uri, mode="append")
    dataset.optimize.optimize_indices(index_names=["vector_idx"], num_indices_to_merge=0)
    dataset = lance.dataset(dataset.uri)
    assert dataset.stats.index_stats("vector_idx")["num_indexed_rows"] == ROWS + 1_000
    assert recall_at_10(dataset) >= 0.85  # as the first 5,000 rows alone (0.92 here)


def test_faiss_takes_one_core_while_other_work_runs_beside():
    """OpenMP keeps the thread count per calling thread: the build's thread alone is
    limited, and gets every core back once the work beside it has ended."""
    busy, seen = threading.Event(), []
    here = faiss.omp_get_max_threads()

    def build() -> None:
        seen.append(faiss.omp_get_max_threads())  # a new thread's own count
        threads = FaissThreads(busy)
        busy.set()
        threads.set()
        seen.append(faiss.omp_get_max_threads())
        busy.clear()
        threads.set()
        seen.append(faiss.omp_get_max_threads())

    thread = threading.Thread(target=build)
    thread.start()
    thread.join()
    every = seen[0]
    assert seen == [every, 1, every]
    assert faiss.omp_get_max_threads() == here  # other threads keep their count


def test_the_row_ids_kept_hold_no_batch_alive(tmp_path):
    """The assignment keeps every batch's row ids to the end of its scan; a view of them
    kept each decoded batch, vectors and all, until then (15 GB at ten million rows)."""
    dataset = clustered(tmp_path, rows=2_000)
    batch = next(iter(dataset.to_batches(columns=["vector"], with_row_id=True)))
    ids = row_ids(batch)
    assert ids.flags.owndata and ids.dtype == np.uint64
    assert ids.tolist() == batch["_rowid"].to_pylist()
