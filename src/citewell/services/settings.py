"""The settings as admins read and change them: every one (secrets masked), and those that
change while the server runs (in force for every process on the database, and across
restarts), each change written to the audit log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.config import masked_settings
from citewell.engine.core import Engine
from citewell.live_settings import OPEN_WEBUI_NAMES, RUNTIME_SETTINGS, LiveSettings
from citewell.services.accounts import require_admin


@dataclass(frozen=True)
class RuntimeSettings:
    """The settings that change at run time, as in force now (masked)."""

    values: dict[str, Any]  # by Citewell's names
    open_webui: dict[str, Any]  # the same, by Open WebUI's names where it has them
    changed: list[str]  # set at run time
    start: dict[str, Any]  # their values from the environment or config file


class SettingsService:
    def __init__(self, live: LiveSettings, audit: AuditLog, access: Access) -> None:
        self.live, self.audit, self.access = live, audit, access

    @classmethod
    def of(cls, app: Engine, access: Access) -> SettingsService:
        """The running engine's settings, changes recorded in its audit trail."""
        return cls(app.live, app.accounts.audit, access)

    def effective(self) -> dict[str, Any]:
        """Every setting as this server runs with it; keys and URL passwords masked."""
        require_admin(self.access)
        return masked_settings(self.live.settings)

    def runtime(self) -> RuntimeSettings:
        require_admin(self.access)
        in_force = self.live.current
        shown, start = masked_settings(in_force.settings), masked_settings(self.live.start)
        changed = sorted(in_force.changed)
        return RuntimeSettings(
            values={name: shown[name] for name in RUNTIME_SETTINGS},
            open_webui={owui: shown[name] for owui, name in OPEN_WEBUI_NAMES.items()},
            changed=changed,
            start={name: start[name] for name in changed},
        )

    def update(self, changes: dict[str, Any]) -> list[str]:
        """Apply all of ``changes`` or none (one invalid value refuses the lot); values equal
        to those in force change nothing. Returns the names that changed."""
        require_admin(self.access)
        changed = self.live.update(changes, self.access.user_id)
        if changed:
            self.audit.record(self.access, "settings.update", "settings", "runtime", names=changed)
        return changed

    def reset(self, names: Sequence[str] | None = None) -> None:
        """Back to the start-up values: of ``names``, or of every setting changed."""
        require_admin(self.access)
        self.live.reset(names)
        self.audit.record(
            self.access, "settings.reset", "settings", "runtime", names=list(names or []) or "all"
        )
