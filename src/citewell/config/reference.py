"""The settings shown to people: masked for display, and the generated reference."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from citewell.config.fields import env_names, scopes_of
from citewell.config.settings import SECTIONS, Settings

SECRET_SUFFIXES = (
    "_api_key",
    "_password",
    "_secret",
    "_token",
    "_secret_key",
    "_secret_access_key",
)


def masked_settings(settings: Settings) -> dict[str, Any]:
    """The effective settings by plain name, for display: keys masked, passwords and query
    strings taken out of URLs (a search provider's URL may carry its key)."""
    shown: dict[str, Any] = {}
    for name, value in settings.flat(mode="json").items():
        if name.endswith(SECRET_SUFFIXES):
            shown[name] = "********" if value else ""
        elif isinstance(value, str) and "://" in value:
            shown[name] = _masked_url(value)
        else:
            shown[name] = value
    return shown


def _masked_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:********@{host}" if ":" in user else f"{user}@{host}"
    query = "********" if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def configuration_markdown() -> str:
    """The configuration reference, generated from the sections of ``Settings``."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from `citewell.config` by `citewell config --markdown`; a test keeps it in "
        "step. Set any of these as an environment variable, in a TOML file passed with "
        "`--config` (plain names at the top, or in a table named after the section, e.g. "
        "`[chunking]`), or on the command line where a flag exists. Names in the *also "
        "accepted* column are Open WebUI's, so its settings carry over. *Also set* says where "
        "else a setting may change: at run time by an admin (`/api/v1/retrieval/config`, "
        "`citewell config set`), per knowledge base, per request or model preset; settings "
        "marked *embedding space* define the vectors, and changing them re-embeds.",
    ]
    for section, kind in SECTIONS.items():
        lines += ["", f"## {section}", "", str(kind.__doc__).strip(), ""]
        lines += [
            "| setting | environment variable | also accepted | default | also set | description |",
            "|---|---|---|---|---|---|",
        ]
        for name, info in kind.model_fields.items():
            names = env_names(name, info)
            default = "(per-user data dir)" if name == "data_dir" else repr(info.default)
            also = ", ".join(f"`{n}`" for n in names[1:]) or "—"
            scopes = ", ".join(scopes_of(info).words()) or "—"
            lines.append(
                f"| `{name}` | `{names[0]}` | {also} | `{default}` | {scopes} | "
                f"{info.description} |"
            )
    return "\n".join(lines) + "\n"
