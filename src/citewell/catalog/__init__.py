from citewell.catalog.catalog import Catalog, FileRecord, KnowledgeBase, sqlite_engine

__all__ = ["Catalog", "FileRecord", "KnowledgeBase", "sqlite_engine"]
