"""Users and groups (admins only)."""

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
from citewell.api.deps import AdminDep, AuditDep, AuthDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.errors import InvalidInput

router = APIRouter(prefix="/api/v1", tags=["users"], route_class=OffLoopJsonRoute)


@router.get("/users")
def list_users(_: AdminDep, auth: AuthDep) -> list[UserPublic]:
    return [UserPublic.of(u) for u in auth.users.list_users()]


@router.post("/users", status_code=status.HTTP_201_CREATED)
def create_user(body: UserCreate, access: AdminDep, auth: AuthDep, audit: AuditDep) -> UserPublic:
    """A user; without a password they use API keys only (make one with `citewell key
    create` or, as that user, POST /api/v1/auth/keys)."""
    user = auth.users.create_user(body.name, body.password, body.role)
    audit.record(access, "user.create", "user", user.id, name=user.name, role=user.role)
    return UserPublic.of(user)


@router.get("/users/{user}")
def get_user(user: str, _: AdminDep, auth: AuthDep) -> UserPublic:
    return UserPublic.of(auth.users.get_user(user))


@router.patch("/users/{user}")
def update_user(
    user: str, body: UserUpdate, access: AdminDep, auth: AuthDep, audit: AuditDep
) -> UserPublic:
    """Disable or enable a user (their keys stop or start working), change the role or set a
    password. The last enabled admin cannot be demoted or disabled."""
    target = auth.users.get_user(user)
    demoting = target.is_admin and (body.disabled or body.role == "user")
    if demoting and auth.users.admin_count() <= 1:
        raise InvalidInput("That is the last admin; make another admin first.")
    if body.password is not None:
        auth.users.set_password(target.id, body.password)
    updated = auth.users.update_user(target.id, body.disabled, body.role)
    changes = body.model_dump(exclude_none=True, exclude={"password"})
    audit.record(
        access, "user.update", "user", target.id, **changes, password=body.password is not None
    )
    return UserPublic.of(updated)


@router.get("/groups")
def list_groups(_: AdminDep, auth: AuthDep) -> list[GroupPublic]:
    return [GroupPublic.of(g) for g in auth.grants.list_groups()]


@router.post("/groups", status_code=status.HTTP_201_CREATED)
def create_group(
    body: GroupCreate, access: AdminDep, auth: AuthDep, audit: AuditDep
) -> GroupPublic:
    group = auth.grants.create_group(body.name)
    audit.record(access, "group.create", "group", group.id, name=group.name)
    return GroupPublic.of(group)


@router.post("/groups/{group}/members", status_code=status.HTTP_201_CREATED)
def add_member(
    group: str, body: MemberCreate, access: AdminDep, auth: AuthDep, audit: AuditDep
) -> GroupPublic:
    user = auth.users.get_user(body.user)
    updated = auth.grants.add_member(group, user.id)
    audit.record(access, "group.add_member", "group", updated.id, user=user.name)
    return GroupPublic.of(updated)


@router.delete("/groups/{group}/members/{user}")
def remove_member(
    group: str, user: str, access: AdminDep, auth: AuthDep, audit: AuditDep
) -> GroupPublic:
    member = auth.users.get_user(user)
    updated = auth.grants.remove_member(group, member.id)
    audit.record(access, "group.remove_member", "group", updated.id, user=member.name)
    return GroupPublic.of(updated)


@router.delete("/groups/{group}", status_code=status.HTTP_204_NO_CONTENT)
def delete_group(group: str, access: AdminDep, auth: AuthDep, audit: AuditDep) -> None:
    """Delete the group and every grant to it."""
    found = auth.grants.get_group(group)
    auth.grants.delete_group(found.id)
    audit.record(access, "group.delete", "group", found.id, name=found.name)
