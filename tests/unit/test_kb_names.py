"""KB names are unique per owner; a name resolves among what the caller may read."""

import pytest

from citewell.catalog import Catalog
from citewell.errors import AmbiguousName, NameTaken


@pytest.fixture
def catalog(database):
    return Catalog(database)


def test_same_name_for_two_owners_but_not_twice_for_one(catalog):
    alice = catalog.create_kb("handbook", owner_id="alice")
    bob = catalog.create_kb("handbook", owner_id="bob")
    assert alice.id != bob.id
    with pytest.raises(NameTaken):
        catalog.create_kb("handbook", owner_id="bob")
    other = catalog.create_kb("other", owner_id="bob")
    with pytest.raises(NameTaken):
        catalog.update_kb(other.id, name="handbook")
    catalog.update_kb(other.id, name="manual")


def test_own_first_then_the_only_one_else_ambiguous(catalog):
    alice = catalog.create_kb("handbook", owner_id="alice")
    bob = catalog.create_kb("handbook", owner_id="bob")
    everything = lambda kb: True  # noqa: E731
    assert catalog.resolve_kb("handbook", everything, "bob").id == bob.id
    only_alice = lambda kb: kb.owner_id == "alice"  # noqa: E731
    assert catalog.resolve_kb("handbook", only_alice, "carol").id == alice.id
    with pytest.raises(AmbiguousName) as raised:
        catalog.resolve_kb("handbook", everything, "carol")
    assert alice.id in raised.value.message and bob.id in raised.value.message
    assert catalog.resolve_kb(alice.id, everything, "carol").id == alice.id
    assert catalog.resolve_kb("handbook", lambda kb: False, "carol") is None


def test_the_cli_ensures_its_own_kb_not_a_users(catalog):
    alice = catalog.create_kb("handbook", owner_id="alice")
    made = catalog.ensure_kb("handbook")
    assert made.id != alice.id and made.owner_id == ""
    assert catalog.ensure_kb("handbook").id == made.id
    assert catalog.ensure_kb(alice.id).id == alice.id
