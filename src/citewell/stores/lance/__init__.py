"""The embedded chunk store: LanceDB tables in the data dir, with in-memory copies of small
tables, of single KBs and of whole big tables, and the upkeep of LanceDB's indexes."""

from citewell.stores.lance.rest_client import defer_rest_client

defer_rest_client()  # before any module here imports Lance
