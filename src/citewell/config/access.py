"""The ``access`` section: who may do what: authentication, rate limits, sign-in throttling."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from citewell.config.fields import Section, setting


class AccessSection(Section):
    """Who may do what, and how much: authentication, keys, rate limits."""

    share_embeddings: bool = setting(
        False,
        "Share the embedding cache (and the cache of recent query vectors) between users. "
        "Off: each user's texts are cached apart (the owner of the KB written to, or the "
        "caller for queries and /v1/embeddings), so no answer's speed or chunks_embedded "
        "tells one user that another stored the same sentence. On: the same text is "
        "embedded once for everyone, which gives that property up; for a one-team server.",
    )

    auth: Literal["required", "none"] = setting(
        "required",
        "'required': every API call but /healthz, /readyz and the docs needs an API key "
        "(Authorization: Bearer cw_…). 'none': no authentication, everyone is the admin; "
        "`citewell serve` accepts it only on a loopback address (127.0.0.1, ::1, localhost). "
        "Open WebUI's WEBUI_AUTH=False means 'none'.",
        "WEBUI_AUTH",
    )

    session_hours: float = setting(
        12.0, "Lifetime of the key that signing in with a password (POST /api/v1/auth/login) gives."
    )

    rate_limit_per_minute: int = setting(
        6000,
        "Requests one user may make per minute with all of their API keys together (bursts "
        "up to that many); 429 beyond. Counted across every server process sharing the "
        "database (on PostgreSQL, or with workers > 1; one process counts in memory). One "
        "key often serves a whole integration (an Open WebUI for a team), so the default "
        "is high. 0: no limit.",
    )

    max_keys_per_user: int = setting(
        100,
        "Live API keys (not revoked, not expired) one user may hold, sign-in keys included. "
        "At the cap a sign-in retires the user's oldest sign-in key and POST "
        "/api/v1/auth/keys answers 409. Keys made by an admin with the CLI are not counted "
        "against it. 0: no cap.",
        ge=0,
    )

    login_failures_per_address: int = setting(
        10,
        "Failed sign-ins a minute for one name from one address before that address must "
        "wait (429). The address is the client's, or X-Forwarded-For from a proxy that "
        "forwarded_allow_ips names (127.0.0.1 by default).",
    )

    login_failures_per_name: int = setting(
        100,
        "Failed sign-ins a minute for one name from all addresses together before only "
        "addresses that signed in to it before may keep trying: guessing from many addresses "
        "is stopped, and the user on a known address is never locked out.",
    )

    @field_validator("auth", mode="before")
    @classmethod
    def _owui_auth_flag(cls, value: Any) -> Any:
        # Open WebUI's WEBUI_AUTH is a boolean.
        flag = str(value).strip().lower()
        if flag in ("false", "0", "no", "off"):
            return "none"
        return "required" if flag in ("true", "1", "yes", "on") else value
