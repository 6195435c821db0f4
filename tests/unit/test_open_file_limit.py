"""The CLI lifts the soft limit on open files (Lance leaks some; docs/deploy.md)."""

from __future__ import annotations

import resource  # Unix only, as the limit is
import subprocess
import sys

SCRIPT = """
import resource
from citewell.cli import raise_open_file_limit
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
raise_open_file_limit(wanted=4096)
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)
"""


def test_the_soft_limit_is_raised_towards_the_hard_one():
    out = subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True, text=True)
    soft, hard = (int(v) for v in out.stdout.split())
    expected = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    assert soft == expected > 256, out.stderr
