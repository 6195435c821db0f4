from citewell.catalog.catalog import Catalog, FileLink, FileRecord, KnowledgeBase, sqlite_engine

__all__ = ["Catalog", "FileLink", "FileRecord", "KnowledgeBase", "sqlite_engine"]
