"""Request and response bodies of users, keys, groups, grants and the audit trail."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from citewell.api.names import Name, OptionalName
from citewell.auth import ApiKey, User
from citewell.auth.audit import AuditEvent
from citewell.auth.grants import Grant, Group


class LoginCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    password: str = Field(min_length=1, max_length=1000)
    method: Literal["password", "ldap"] | None = Field(
        None,
        description="'password': Citewell's own; 'ldap': the directory's. Default: 'password' "
        "where password sign-in is on, else 'ldap'.",
    )


class TicketCreate(BaseModel):
    ticket: str = Field(min_length=1, max_length=200)


class SignInMethodsPublic(BaseModel):
    """How people may sign in here (for a sign-in page)."""

    password: bool
    ldap: bool
    oidc: str = Field(description="The OpenID provider's name for its button; '' when off.")
    oidc_url: str = Field(description="Where the browser goes to sign in with it.")
    trusted_header: bool


class UserPublic(BaseModel):
    id: str
    name: str
    role: str
    disabled: bool
    created_at: int

    @classmethod
    def of(cls, user: User) -> UserPublic:
        return cls(
            id=user.id,
            name=user.name,
            role=user.role,
            disabled=user.disabled,
            created_at=int(user.created_at),
        )


class UserCreate(BaseModel):
    name: Name
    password: str = Field(
        default="", max_length=1000, description="Empty: the user signs in with API keys only."
    )
    role: Literal["admin", "user"] = "user"


class UserUpdate(BaseModel):
    disabled: bool | None = None
    role: Literal["admin", "user"] | None = None
    password: str | None = Field(default=None, max_length=1000)


class ApiKeyCreate(BaseModel):
    name: OptionalName = ""
    knowledge_bases: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="Limit the key to these KBs (ids or names); empty: every KB you may use.",
    )
    read_only: bool = False


class ApiKeyPublic(BaseModel):
    id: str
    user_id: str
    name: str
    prefix: str = Field(description="The key's first characters, to tell keys apart.")
    knowledge_base_ids: list[str]
    read_only: bool
    created_at: int
    last_used_at: int
    expires_at: int = Field(description="0: never.")
    revoked: bool

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyPublic:
        return cls(
            id=key.id,
            user_id=key.user_id,
            name=key.name,
            prefix=key.prefix,
            knowledge_base_ids=list(key.kb_ids),
            read_only=key.read_only,
            created_at=int(key.created_at),
            last_used_at=int(key.last_used_at),
            expires_at=int(key.expires_at),
            revoked=key.revoked,
        )


class ApiKeyCreated(ApiKeyPublic):
    key: str = Field(description="The key itself: shown this once, never stored.")


class SessionPublic(BaseModel):
    api_key: str = Field(description="Send as 'Authorization: Bearer …' until expires_at.")
    token_type: Literal["bearer"] = "bearer"
    expires_at: int
    user: UserPublic


class MePublic(BaseModel):
    user: UserPublic | None = Field(description="null when the server runs with auth=none.")
    key: ApiKeyPublic | None
    knowledge_bases: int = Field(description="How many KBs you may read.")


class GroupCreate(BaseModel):
    name: Name


class MemberCreate(BaseModel):
    user: str = Field(min_length=1, max_length=200, description="A user's name or id.")


class GroupPublic(BaseModel):
    id: str
    name: str
    members: list[str]

    @classmethod
    def of(cls, group: Group) -> GroupPublic:
        return cls(id=group.id, name=group.name, members=list(group.members))


class GrantCreate(BaseModel):
    principal: str = Field(
        min_length=1, max_length=250, description="'user:NAME', 'group:NAME' or 'public'."
    )
    permission: Literal["read", "write"] = "read"


class GrantPublic(BaseModel):
    knowledge_base_id: str
    principal: str
    permission: str

    @classmethod
    def of(cls, grant: Grant) -> GrantPublic:
        return cls(
            knowledge_base_id=grant.kb_id, principal=grant.principal, permission=grant.permission
        )


class AuditEventPublic(BaseModel):
    id: int
    at: float
    actor_id: str
    actor: str
    action: str
    target_type: str
    target_id: str
    detail: dict[str, Any]

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventPublic:
        return cls(**event.__dict__)
