"""The embedded chunk store: LanceDB tables in the data dir, with in-memory copies of small
tables, of single KBs and of whole big tables, and the upkeep of LanceDB's indexes."""
