from citewell.catalog.catalog import Catalog, FileLink, FileRecord, KnowledgeBase

__all__ = ["Catalog", "FileLink", "FileRecord", "KnowledgeBase"]
