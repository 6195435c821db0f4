"""A job's states, and which of them mean its worker is on it."""

from __future__ import annotations

RUNNING = ("parsing", "chunking", "embedding")
FINAL = ("indexed", "failed", "cancelled")
STATES = ("queued", *RUNNING, *FINAL)
ENDABLE = (*RUNNING, "cancelled")  # states a job may succeed from (a cancel can come late)
