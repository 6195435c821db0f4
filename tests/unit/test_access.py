"""Access: what one caller may read and change, and the filter every chunk search gets."""

from citewell.auth import ApiKey, User
from citewell.auth.access import Access
from citewell.catalog import KnowledgeBase
from citewell.types import ChunkFilter

ALICE = User("u-alice", "alice", "user", False, 0.0)
ADMIN = User("u-admin", "root", "admin", False, 0.0)


def kb(kb_id: str, owner: str = "") -> KnowledgeBase:
    return KnowledgeBase(kb_id, kb_id, "", 0.0, 0.0, 0, owner)


def key(kb_ids: tuple[str, ...] = (), read_only: bool = False) -> ApiKey:
    return ApiKey("k", "u", "", "cw_x", kb_ids, read_only, 0.0, 0.0, 0.0)


def test_a_user_reads_owned_and_granted_kbs_and_writes_owned_and_write_granted():
    access = Access.of(ALICE, None, ["mine"], [("shared", "read"), ("team", "write")])
    assert access.readable == {"mine", "shared", "team"}
    assert access.writable == {"mine", "team"}
    assert access.can_write(kb("team")) and not access.can_write(kb("shared"))
    assert access.can_manage(kb("mine", owner="u-alice")) and not access.can_manage(kb("team"))
    assert not access.can_read("theirs")


def test_the_store_filter_narrows_and_never_widens():
    access = Access.of(ALICE, None, ["mine"], [("shared", "read")])
    assert access.where(ChunkFilter()) == ChunkFilter(kb_ids=("mine", "shared"))
    asked = ChunkFilter(kb_ids=("theirs", "mine"))
    assert access.where(asked) == ChunkFilter(kb_ids=("mine",))
    files = ChunkFilter(file_ids=("f1",))
    assert access.where(files) == ChunkFilter(kb_ids=("mine", "shared"), file_ids=("f1",))
    nothing = Access.of(ALICE, None, [], [])
    assert nothing.where(ChunkFilter()).kb_ids == ()  # matches no chunk at all


def test_a_key_narrows_even_an_admin_and_read_only_writes_nothing():
    admin = Access.of(ADMIN, None, [], [])
    assert admin.readable is None and admin.where(ChunkFilter()) == ChunkFilter()
    scoped = Access.of(ADMIN, key(("a",)), [], [])
    assert scoped.readable == {"a"} and not scoped.can_read("b") and not scoped.can_create()
    reader = Access.of(ALICE, key(read_only=True), ["mine"], [])
    assert reader.can_read("mine") and not reader.can_write(kb("mine", owner="u-alice"))
    assert not reader.can_create()
    mixed = Access.of(ALICE, key(("mine", "theirs")), ["mine", "other"], [])
    assert mixed.readable == {"mine"}  # the key's scope never adds what the user lacks


def test_a_kb_made_during_the_request_is_readable_at_once():
    access = Access.of(ALICE, None, [], [])
    fresh = kb("new", owner="u-alice")
    widened = access.including(fresh)
    assert widened.can_read("new") and widened.can_write(fresh)
    assert access.including(kb("stranger", owner="u-bob")) is access


def test_no_authentication_means_the_local_operator():
    local = Access.everything()
    assert local.is_admin and local.name == "local" and local.user_id == ""
    assert local.where(ChunkFilter(kb_ids=("x",))) == ChunkFilter(kb_ids=("x",))
