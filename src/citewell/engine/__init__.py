"""The engine: ingestion and search behind one facade (``Engine``), and the view of it one
caller has (``Scoped``)."""
