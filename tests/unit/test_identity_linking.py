"""From a provider's identity to a Citewell user (auth/identity/linking.py), on SQLite and
PostgreSQL: who may sign in the first time, which groups a sign-in sets and which it leaves,
and the role admin groups give."""

from __future__ import annotations

import pytest

from citewell.auth.grants import GrantStore
from citewell.auth.identity import ExternalIdentity, SignUpClosed
from citewell.auth.identity.linking import IdentityConflict, IdentityLinker, group_names
from citewell.auth.identity.store import IdentityStore
from citewell.auth.store import AuthStore
from citewell.config import Settings


def _linker(engine, **settings) -> IdentityLinker:  # type: ignore[no-untyped-def]
    identity = Settings(**settings).identity
    return IdentityLinker(AuthStore(engine), IdentityStore(engine), identity)


def _person(name: str = "ana", *groups: str, subject: str = "") -> ExternalIdentity:
    return ExternalIdentity(
        "oidc", "https://idp.example", subject or f"sub-{name}", name, "", groups
    )


def _members(engine, group: str) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    return GrantStore(engine).get_group(group).members


def test_without_sign_up_only_people_an_admin_made_get_in(database) -> None:
    linker = _linker(database)
    with pytest.raises(SignUpClosed, match="citewell user create ana --no-password"):
        linker.link(_person("ana"))
    assert AuthStore(database).find_user("ana") is None
    made = AuthStore(database).create_user("ana")  # by an admin, no password
    linked = linker.link(_person("ana"))
    assert linked.user.id == made.id and not linked.created
    # Linked by the provider's subject from now on: a rename there keeps the account.
    assert linker.link(_person("ana-renamed", subject="sub-ana")).user.id == made.id


def test_a_user_with_a_password_is_never_taken_over(database) -> None:
    AuthStore(database).create_user("root", "a-long-local-password", role="admin")
    with pytest.raises(IdentityConflict):
        _linker(database, sign_up=True).link(_person("root"))


def test_an_admin_account_is_never_taken_over(database) -> None:
    AuthStore(database).create_user("admin", role="admin")  # the first start's, no password
    with pytest.raises(IdentityConflict):
        _linker(database, sign_up=True).link(_person("admin"))


def test_sign_up_makes_the_user_once(database) -> None:
    linker = _linker(database, sign_up=True)
    first = linker.link(_person("ben"))
    assert first.created and first.user.role == "user"
    assert not linker.link(_person("ben")).created


def test_groups_follow_the_provider_and_an_admins_memberships_stay(database) -> None:
    grants = GrantStore(database)
    for name in ("engineering", "sales", "board"):
        grants.create_group(name)
    linker = _linker(database, sign_up=True)
    user = linker.link(_person("cy", "engineering", "sales", "unknown-group")).user
    assert _members(database, "engineering") == ("cy",)
    grants.add_member("board", user.id)  # an admin's own decision
    grants.add_member("sales", user.id)  # made again by an admin: the admin's now
    changed = linker.link(_person("cy")).groups
    assert changed is not None and changed.removed == ("engineering",)
    assert _members(database, "engineering") == ()
    assert _members(database, "board") == ("cy",) and _members(database, "sales") == ("cy",)
    assert "unknown-group" not in {g.name for g in grants.list_groups()}


def test_group_creation_and_ldap_dns(database) -> None:
    linker = _linker(database, sign_up=True, group_creation=True)
    dn = "cn=ops,ou=groups,dc=example,dc=org"
    linker.link(_person("dee", dn))
    assert _members(database, "ops") == ("dee",)


def test_mapped_names() -> None:
    settings = Settings(identity_group_map={"0c6f-guid": "finance"}).identity
    found = group_names(["0c6f-guid", "cn=ops,ou=g,dc=x", "plain", "plain"], settings)
    assert found == ["finance", "ops", "plain"]


def test_admin_groups_set_the_role_but_keep_the_last_admin(database) -> None:
    linker = _linker(database, sign_up=True, admin_groups="citewell-admins")
    eve = linker.link(_person("eve", "citewell-admins"))
    assert eve.user.role == "admin" and eve.role_changed
    # eve is the only admin: leaving the group does not leave the server without one
    assert linker.link(_person("eve")).user.role == "admin"
    AuthStore(database).create_user("root", "a-long-local-password", role="admin")
    assert linker.link(_person("eve")).user.role == "user"


def test_a_disabled_user_is_refused(database) -> None:
    from citewell.auth.identity import IdentityRefused

    linker = _linker(database, sign_up=True)
    user = linker.link(_person("fay")).user
    AuthStore(database).update_user(user.id, disabled=True)
    with pytest.raises(IdentityRefused, match="disabled"):
        linker.link(_person("fay"))


def test_a_state_is_taken_once(database) -> None:
    store = IdentityStore(database)
    store.put_state("s1", "state", {"nonce": "n"}, 60)
    assert store.take_state("s1", "ticket") is None  # another kind does not match
    assert store.take_state("s1", "state") == {"nonce": "n"}
    assert store.take_state("s1", "state") is None
    store.put_state("s2", "state", {}, -1)  # already expired
    assert store.take_state("s2", "state") is None


def test_a_bad_ldap_filter_fails_the_start() -> None:
    from citewell.auth.identity.ldap import LdapDirectory
    from citewell.errors import ConfigError

    settings = Settings(
        ldap_url="ldaps://ldap.example.org",
        ldap_bind_dn="cn=svc,dc=example,dc=org",
        ldap_search_filter="(&(objectClass=person)",
    ).identity
    with pytest.raises(ConfigError, match="ldap_search_filter is not a valid LDAP filter"):
        LdapDirectory(settings)


def test_plain_ldap_and_anonymous_search_need_saying_so() -> None:
    from citewell.auth.identity.ldap import LdapDirectory
    from citewell.errors import ConfigError

    with pytest.raises(ConfigError, match="in the clear"):
        LdapDirectory(
            Settings(ldap_url="ldap://h", ldap_start_tls=False, ldap_bind_dn="x").identity
        )
    with pytest.raises(ConfigError, match="service account"):
        LdapDirectory(Settings(ldap_url="ldaps://h").identity)
