"""The directory check: every user who signed in through LDAP is looked up again, so that
API keys follow the directory between sign-ins. Someone gone from the directory (or no
longer matching ldap_search_filter: disabled, moved out) is disabled in Citewell, which
stops all their keys at once; the rest get the directory's groups and role again. Runs from
`citewell identity sync` and every ldap_sync_minutes in the server."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.auth.identity.methods import IdentityMethods, record_changes
from citewell.auth.store import AuthStore
from citewell.errors import CitewellError

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    checked: int = 0
    disabled: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # whose groups or role changed


def sync_directory(methods: IdentityMethods, users: AuthStore, audit: AuditLog) -> SyncReport:
    """Look every LDAP-linked, enabled user up again (DirectoryUnavailable if it cannot)."""
    report = SyncReport()
    ldap = methods.ldap
    if ldap is None:
        return report
    for linked in methods.store.identities(method="ldap"):
        user = users.get_user(linked.user_id)
        if user.disabled or linked.issuer != ldap.issuer:
            continue
        report.checked += 1
        now = ldap.lookup(linked.subject)
        if now is None:
            users.update_user(user.id, disabled=True)
            audit.record(
                Access.everything(), "user.update", "user", user.id, disabled=True, via="ldap sync"
            )
            report.disabled.append(user.name)
            continue
        again = methods.linker.link(now)
        if again.role_changed or (again.groups and (again.groups.added or again.groups.removed)):
            record_changes(audit, again)  # a check, not a sign-in: no user.login
            report.changed.append(user.name)
    return report


class DirectorySync:
    """The server's periodic check (a daemon thread; ``stop()`` ends it)."""

    def __init__(self, methods: IdentityMethods, users: AuthStore, audit: AuditLog) -> None:
        self.methods, self.users, self.audit = methods, users, audit
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        minutes = self.methods.settings.ldap_sync_minutes
        if self.methods.ldap is None or minutes <= 0:
            return
        self._thread = threading.Thread(target=self._run, args=(minutes * 60,), daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                report = sync_directory(self.methods, self.users, self.audit)
                log.info("directory check: %d people, disabled %s", report.checked, report.disabled)
            except CitewellError as exc:  # the directory is down: try again next time
                log.warning("directory check failed: %s", exc)

    def stop(self) -> None:
        self._stop.set()
