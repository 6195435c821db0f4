"""The local operator's services on the database alone: what ``citewell user``, ``key``,
``group``, ``share`` and ``kb list`` need, without the engine (no model, no chunk store).
The local operator is an admin (``Access.everything``); the services check and audit as
they do for any caller, so a change from the CLI is recorded like one over HTTP."""

from __future__ import annotations

from citewell.app.database import AccountDatabase
from citewell.auth.access import Access
from citewell.catalog import KnowledgeBase
from citewell.services.accounts import AccountService
from citewell.services.sharing import Shareable, SharingService

OPERATOR = Access.everything()


def local_accounts(db: AccountDatabase) -> AccountService:
    accounts = db.accounts
    return AccountService(
        accounts.users, accounts.grants, accounts.audit, db.settings.access, OPERATOR
    )


def local_kb_sharing(db: AccountDatabase) -> SharingService:
    """Sharing any KB (by name or id) as the local operator, who manages them all."""

    def managed(ref: str) -> str:
        return db.catalog.get_kb(ref).id

    kbs = Shareable("kb", "knowledge_base", managed, lambda ref: (managed(ref), True))
    return SharingService(db.accounts.grants, db.accounts.audit, OPERATOR, kbs)


def kb_of(db: AccountDatabase, ref: str) -> KnowledgeBase:
    """Any KB by name or id (the operator reads them all)."""
    return db.catalog.get_kb(ref)


def local_kbs(db: AccountDatabase) -> list[KnowledgeBase]:
    """Every KB with its file count, as the local operator reads them."""
    return db.catalog.list_kbs(OPERATOR.readable)
