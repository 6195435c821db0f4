"""Facts about the machine, read once at start-up where a setting says "auto"."""

from __future__ import annotations

import os
from pathlib import Path

# Where a container's memory limit is written: cgroup v2, then v1.
CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


def memory_bytes(cgroup_limits: tuple[Path, ...] = CGROUP_LIMITS) -> int:
    """The memory this process's machine has: physical memory, or the container's limit
    when one is set and lower (a server in Docker must not size itself by the host)."""
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in cgroup_limits:
        limit = _read_limit(path)
        if limit is not None:
            return min(physical, limit)
    return physical


def _read_limit(path: Path) -> int | None:
    """A cgroup file's byte limit; None when absent, unreadable or unlimited ("max")."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
