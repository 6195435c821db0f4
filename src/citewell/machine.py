"""Facts about the machine: its memory, read once at start-up where a setting says "auto",
and the memory free now, read before a large allocation that can wait; and the lowest CPU
priority, for work that must leave the cores to searches; and whether a process of this
host still runs, for files its processes leave behind."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

# Where a container's memory limit is written: cgroup v2, then v1; and what it uses now.
CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)
CGROUP_USAGE = (
    Path("/sys/fs/cgroup/memory.current"),
    Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)
MEMINFO = Path("/proc/meminfo")


def memory_bytes(cgroup_limits: tuple[Path, ...] = CGROUP_LIMITS) -> int:
    """The memory this process's machine has: physical memory, or the container's limit
    when one is set and lower (a server in Docker must not size itself by the host)."""
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in cgroup_limits:
        limit = _read_bytes(path)
        if limit is not None:
            return min(physical, limit)
    return physical


def _read_bytes(path: Path) -> int | None:
    """A cgroup file's byte count; None when absent, unreadable or unlimited ("max")."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def memory_free_bytes(
    meminfo: Path = MEMINFO,
    cgroup_limits: tuple[Path, ...] = CGROUP_LIMITS,
    cgroup_usage: tuple[Path, ...] = CGROUP_USAGE,
) -> int | None:
    """Memory that can be taken now without swapping or pushing others out: the kernel's
    MemAvailable, or what is left under the container's limit when that is less. None
    when neither can be read (not Linux)."""
    available = _mem_available(meminfo)
    free = [] if available is None else [available]
    for limit_path, usage_path in zip(cgroup_limits, cgroup_usage, strict=True):
        limit, usage = _read_bytes(limit_path), _read_bytes(usage_path)
        if limit is not None and usage is not None:
            free.append(max(0, limit - usage))
            break
    return min(free) if free else None


def _mem_available(meminfo: Path) -> int | None:
    try:
        lines = meminfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024  # the kernel counts in kB
    return None


def lower_priority() -> None:
    """Searches have the cores first: the calling thread runs at the lowest priority from
    now on. Linux keeps a priority a thread, and the threads and processes a thread starts
    afterwards inherit it."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not allowed: as is
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def process_running(pid: int) -> bool:
    """Whether a process with this id runs on this host (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
