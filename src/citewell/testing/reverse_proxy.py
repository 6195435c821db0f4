"""A real reverse proxy for tests: Debian's nginx on 127.0.0.1 in front of Citewell, signing
people in with HTTP basic authentication and passing who they are (and their groups) in
headers it sets itself, as oauth2-proxy or Authelia behind nginx do. As root, it runs as
``nobody``; everything it writes stays in its temporary folder."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from citewell.testing.processes import free_port, log_of, run_as_unprivileged, stop, wait_listening


def _config(root: Path, port: int, upstream: str, groups: dict[str, str]) -> str:
    mapped = "\n".join(f'        "{name}" "{value}";' for name, value in groups.items())
    temp = " ".join(
        f"{kind}_temp_path {root}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""
pid {root}/nginx.pid;
error_log {root}/error.log warn;
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log {root}/access.log;
    {temp}
    map $remote_user $directory_groups {{
        default "";
{mapped}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            auth_basic "Citewell";
            auth_basic_user_file {root}/people;
            # Set by the proxy alone: what a client sends under these names is replaced.
            proxy_set_header X-Forwarded-User $remote_user;
            proxy_set_header X-Forwarded-Groups $directory_groups;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header Authorization "";
            proxy_pass {upstream};
        }}
    }}
}}
"""


@dataclass
class NginxProxy:
    """``start()`` in front of ``upstream`` with ``people`` (name → password) and their
    ``groups`` (name → comma-separated), ``stop()`` after; ``url`` is where to go."""

    upstream: str
    people: dict[str, str]
    groups: dict[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="citewell-nginx-")))
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(nginx).exists():
            raise RuntimeError("The reverse-proxy test needs nginx: run scripts/setup-identity.")
        lines = [f"{name}:{{PLAIN}}{password}" for name, password in self.people.items()]
        (self.root / "people").write_text("\n".join(lines) + "\n")
        config = self.root / "nginx.conf"
        config.write_text(_config(self.root, self.port, self.upstream, self.groups))
        user = run_as_unprivileged(self.root)
        command = [nginx, "-e", str(self.root / "error.log"), "-c", str(config)]
        self.process = subprocess.Popen(
            [*command, "-g", "daemon off;"], stderr=subprocess.DEVNULL, user=user
        )
        wait_listening(self.process, self.port, "nginx", log_of(self.root / "error.log"))

    def stop(self) -> None:
        stop(self.process)
        shutil.rmtree(self.root, ignore_errors=True)
