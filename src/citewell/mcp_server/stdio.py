"""`citewell mcp`: the MCP server over stdio, for desktop clients that start a process. It
answers for one API key (no key, no data: with auth required, start-up stops without one),
looked up again for every call, so a key revoked meanwhile stops working at once."""

from __future__ import annotations

from typing import Any

from citewell.app import Citewell
from citewell.auth.access import Access
from citewell.errors import Unauthenticated
from citewell.mcp_server.server import Caller, build_mcp_server

NO_KEY = (
    "citewell mcp answers for an API key: put one in CITEWELL_API_KEY (or name another "
    "variable with --key-env). `citewell key create --user NAME` makes one."
)


class KeyCaller:
    def __init__(self, app: Citewell, key: str) -> None:
        self.app, self.key = app, key
        self.users, self.grants = app.accounts.users, app.accounts.grants
        server = app.settings.server
        self.base_url = server.public_url or f"http://{server.host}:{server.port}"

    def access(self) -> Access:
        if self.app.settings.access.auth == "none":
            return Access.everything()
        found = self.users.identify(self.key) if self.key else None
        if found is None:
            raise Unauthenticated(NO_KEY if not self.key else "That API key is not valid.")
        return self.grants.access(*found)

    def __call__(self, _ctx: Any) -> Caller:
        return Caller(self.access(), self.base_url)


def serve_stdio(app: Citewell, key: str) -> None:
    """Until the client closes stdin."""
    caller = KeyCaller(app, key)
    caller.access()  # a missing or wrong key stops here, not at the first call
    build_mcp_server(app, app.chat, caller).run("stdio")
