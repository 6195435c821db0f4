"""Users and groups (admins only; services.accounts checks)."""

from __future__ import annotations

from fastapi import APIRouter, status

from citewell.api.auth_schemas import (
    GroupCreate,
    GroupPublic,
    MemberCreate,
    UserCreate,
    UserPublic,
    UserUpdate,
)
from citewell.api.deps import AccountsDep, AdminDep
from citewell.api.hygiene import OffLoopJsonRoute

router = APIRouter(prefix="/api/v1", tags=["users"], route_class=OffLoopJsonRoute)


@router.get("/users")
def list_users(_: AdminDep, accounts: AccountsDep) -> list[UserPublic]:
    return [UserPublic.of(u) for u in accounts.list_users()]


@router.post("/users", status_code=status.HTTP_201_CREATED)
def create_user(body: UserCreate, _: AdminDep, accounts: AccountsDep) -> UserPublic:
    """A user; without a password they use API keys only (make one with `citewell key
    create` or, as that user, POST /api/v1/auth/keys)."""
    return UserPublic.of(accounts.create_user(body.name, body.password, body.role))


@router.get("/users/{user}")
def get_user(user: str, _: AdminDep, accounts: AccountsDep) -> UserPublic:
    return UserPublic.of(accounts.get_user(user))


@router.patch("/users/{user}")
def update_user(user: str, body: UserUpdate, _: AdminDep, accounts: AccountsDep) -> UserPublic:
    """Disable or enable a user (their keys stop or start working), change the role or set a
    password. The last enabled admin cannot be demoted or disabled."""
    return UserPublic.of(accounts.update_user(user, body.disabled, body.role, body.password))


@router.get("/groups")
def list_groups(_: AdminDep, accounts: AccountsDep) -> list[GroupPublic]:
    return [GroupPublic.of(g) for g in accounts.list_groups()]


@router.post("/groups", status_code=status.HTTP_201_CREATED)
def create_group(body: GroupCreate, _: AdminDep, accounts: AccountsDep) -> GroupPublic:
    return GroupPublic.of(accounts.create_group(body.name))


@router.post("/groups/{group}/members", status_code=status.HTTP_201_CREATED)
def add_member(group: str, body: MemberCreate, _: AdminDep, accounts: AccountsDep) -> GroupPublic:
    return GroupPublic.of(accounts.add_member(group, body.user))


@router.delete("/groups/{group}/members/{user}")
def remove_member(group: str, user: str, _: AdminDep, accounts: AccountsDep) -> GroupPublic:
    return GroupPublic.of(accounts.remove_member(group, user))


@router.delete("/groups/{group}", status_code=status.HTTP_204_NO_CONTENT)
def delete_group(group: str, _: AdminDep, accounts: AccountsDep) -> None:
    """Delete the group and every grant to it."""
    accounts.delete_group(group)
