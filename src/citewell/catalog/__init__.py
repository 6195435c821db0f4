from citewell.catalog.catalog import Catalog, FileRecord, KnowledgeBase
from citewell.catalog.link_rows import FileLink

__all__ = ["Catalog", "FileLink", "FileRecord", "KnowledgeBase"]
