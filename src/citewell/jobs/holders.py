"""Who holds a running job: host, process id and the process's start time.

Leases let any worker take over a dead worker's jobs, but only after the lease passes. A
worker can tell sooner when the holder ran on its own host: a process that no longer
exists (or whose pid now belongs to a later process) holds nothing, so a server restarted
after a crash resumes its jobs at once instead of waiting out the lease.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path


def _started(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), or '' where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


@cache
def this_process() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{_started(os.getpid())}"


def is_gone(holder: str) -> bool:
    """True when ``holder`` was a process on this host that has since ended."""
    host, _, rest = holder.partition("/")
    pid_text, _, started = rest.partition("/")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host's process: only its lease can tell
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, owned by someone else
    return bool(started) and _started(pid) != started
