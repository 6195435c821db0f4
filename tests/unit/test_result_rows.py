"""The retriever reads rows for as many results as it still needs, not for its whole margin."""

from citewell.retrieval.retriever import HybridRetriever, RetrievalSettings
from citewell.retrieval.tokenize import terms_string
from citewell.stores.lance.store import LanceChunkStore
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import ChunkFilter, SearchMode, StoredChunk

KB = ChunkFilter(kb_ids=("kb",))


class CountingStore(LanceChunkStore):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads: list[int] = []

    def get(self, chunk_ids):
        self.reads.append(len(chunk_ids))
        return super().get(chunk_ids)


def chunk(embedder, cid: str, text: str) -> StoredChunk:
    return StoredChunk(
        id=cid,
        file_id=f"file-{cid}",
        kb_ids=("kb",),
        index=0,
        text=text,
        start=0,
        end=len(text),
        page=None,
        headings=(),
        file_name=f"{cid}.md",
        terms=terms_string(text),
        vector=tuple(embedder.embed([text])[0].tolist()),
    )


def search(tmp_path, texts, k, threshold=0.0, mode=SearchMode.VECTOR):
    embedder = FakeHashEmbedder()
    store = CountingStore(tmp_path / "lance", "t", embedder.dimension)
    store.upsert([chunk(embedder, f"c{i}", t) for i, t in enumerate(texts)])
    retriever = HybridRetriever(store, embedder, RetrievalSettings())
    found = retriever.search("leave policy weeks", KB, k, mode, threshold=threshold)
    return found, store.reads


def test_rows_are_read_once_for_exactly_k_results(tmp_path):
    texts = [f"leave policy weeks note {i}" for i in range(12)]
    found, reads = search(tmp_path, texts, k=3)
    assert len(found) == 3 and reads == [3]


def test_a_duplicate_passage_makes_it_read_one_more(tmp_path):
    texts = ["leave policy weeks", "leave policy weeks", "leave policy weeks pay", "other"]
    found, reads = search(tmp_path, texts, k=2, mode=SearchMode.HYBRID)  # a pool of 50
    assert [r.chunk.text for r in found] == ["leave policy weeks", "leave policy weeks pay"]
    assert reads == [2, 1]  # the copy in another file is skipped, the next one read


def test_results_below_the_threshold_are_not_read(tmp_path):
    texts = ["leave policy weeks", "nothing alike here", "unrelated words entirely"]
    found, reads = search(tmp_path, texts, k=3, threshold=0.5)
    assert [r.chunk.text for r in found] == ["leave policy weeks"]
    assert reads == [1]
