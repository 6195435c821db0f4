"""Metadata tables (SQLAlchemy 2). SQLite in the data dir by default."""

from __future__ import annotations

import secrets
import time
import uuid

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def new_id() -> str:
    return uuid.uuid4().hex


def new_ordered_id() -> str:
    """32 hex digits, the first 12 the milliseconds since 1970, the rest random (as UUIDv7):
    later ids sort later, so their index grows at its end, not at a random page a row
    (journal, "A second import into ten million, and the catalog's keys")."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


class Base(DeclarativeBase):
    pass


class KnowledgeBaseRow(Base):
    """Names are unique per owner, not globally: a taken name must not tell one user that
    another has a KB of that name. Ids are global."""

    __tablename__ = "knowledge_bases"
    __table_args__ = (UniqueConstraint("owner_id", "name", name="uq_kb_owner_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)
    # The user who made it ("": made without authentication; only admins see such KBs).
    owner_id: Mapped[str] = mapped_column(String(32), default="", server_default="")
    # Its own retrieval defaults (JSON; catalog.kb_settings.KnowledgeSettings).
    settings: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")
    # Its chunk sets (ingest.chunk_sets): "" means the shared set, labelled with its id.
    chunk_label: Mapped[str] = mapped_column(String(48), default="", server_default="")
    pending_label: Mapped[str] = mapped_column(String(48), default="", server_default="")
    retired_label: Mapped[str] = mapped_column(String(48), default="", server_default="")
    rechunk_batch: Mapped[str] = mapped_column(String(48), default="", server_default="")


class FileRow(Base):
    """One original: identical bytes are one file within one tenant (the owner of the KBs
    holding it; "" for the operator's), whatever their names. Ids are random."""

    __tablename__ = "files"
    __table_args__ = (Index("uq_files_tenant_sha256", "tenant", "sha256", unique=True),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64))
    tenant: Mapped[str] = mapped_column(String(32), default="", server_default="")
    text_sha256: Mapped[str] = mapped_column(String(64))  # not looked up: unindexed (0018)
    name: Mapped[str] = mapped_column(String(500))
    mime_type: Mapped[str] = mapped_column(String(100))
    size: Mapped[int] = mapped_column(Integer)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20), default="indexed")
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    # Where it came from: upload, text, url, web-search or youtube (with the URL for the last 3).
    source: Mapped[str] = mapped_column(String(20), default="upload", server_default="upload")
    url: Mapped[str] = mapped_column(Text, default="", server_default="")
    # The document's title, part of what is embedded for chunks without headings (re-embedding
    # into a new model rebuilds those texts from the stored chunks and this).
    title: Mapped[str] = mapped_column(Text, default="", server_default="")


class KnowledgeBaseFileRow(Base):
    """A file's membership in a knowledge base, under the path it was added with. Identical
    bytes are stored once, but each link keeps its own name, uploader and time: that is all a
    caller sees of the file ("" for links made before these columns: the file's own name)."""

    __tablename__ = "knowledge_base_files"

    kb_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(String(1000), primary_key=True)
    file_id: Mapped[str] = mapped_column(ForeignKey("files.id"), index=True)
    added_at: Mapped[float] = mapped_column(Float, default=time.time)
    name: Mapped[str] = mapped_column(String(500), default="", server_default="")
    added_by: Mapped[str] = mapped_column(String(32), default="", server_default="")
    # How this link's bytes came in (upload, text, url, …) and from where: per link, not
    # per file ("" for links made before these columns: the file's own).
    source: Mapped[str] = mapped_column(String(20), default="", server_default="")
    url: Mapped[str] = mapped_column(Text, default="", server_default="")
    # The connector that keeps this path in sync ("" for files added by hand), and the
    # source's version of it (size and mtime, a blob id, an ETag) when it was last read.
    connector_id: Mapped[str] = mapped_column(String(32), default="", server_default="")
    version: Mapped[str] = mapped_column(String(200), default="", server_default="")
    # The entry's own id: a path of the KB, as Open WebUI's knowledge API names a "file" (the
    # same bytes at two paths are one file but two entries). Kept when the entry moves.
    entry_id: Mapped[str] = mapped_column(String(32), default=new_ordered_id, index=True)


class KnowledgeFolderRow(Base):
    """A folder of a KB, by its full path ("docs/api"). Folders that files' paths imply get a
    row when first listed; an empty folder is one made on purpose."""

    __tablename__ = "knowledge_folders"
    __table_args__ = (UniqueConstraint("kb_id", "path", name="uq_knowledge_folder_path"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    kb_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"), index=True
    )
    path: Mapped[str] = mapped_column(String(1000))
    created_by: Mapped[str] = mapped_column(String(32), default="", server_default="")
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)


class UploadRow(Base):
    """A file uploaded on its own (Open WebUI's POST /api/v1/files/), held until it is added
    to a KB: files belong to the owner of the KB holding them, unknown until then.
    ``file_id``: the file it became once added ("" before)."""

    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(String(32), index=True)
    name: Mapped[str] = mapped_column(String(500))
    content_type: Mapped[str] = mapped_column(String(200), default="", server_default="")
    size: Mapped[int] = mapped_column(Integer, default=0)
    sha256: Mapped[str] = mapped_column(String(64))
    meta: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")
    file_id: Mapped[str] = mapped_column(String(32), default="", server_default="")
    created_at: Mapped[float] = mapped_column(Float, default=time.time, index=True)


class ConnectorRow(Base):
    """A source bound to a KB and kept in sync with it (citewell.sources.connectors). ``secret``:
    its credentials, encrypted with a server key; ``status``: the last run (JSON);
    ``cursor``: where the source stood then (a git commit)."""

    __tablename__ = "connectors"
    __table_args__ = (UniqueConstraint("kb_id", "name", name="uq_connector_kb_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    kb_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(30))
    name: Mapped[str] = mapped_column(String(200))
    target: Mapped[str] = mapped_column(Text)
    options: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")
    secret: Mapped[str] = mapped_column(Text, default="", server_default="")
    interval: Mapped[float] = mapped_column(Float, default=3600.0, server_default="3600")
    paused: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_by: Mapped[str] = mapped_column(String(32), default="", server_default="")
    # Made by the local operator (the CLI without a server): no allow-list applies.
    local: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)
    next_run_at: Mapped[float] = mapped_column(Float, default=0.0, server_default="0", index=True)
    status: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")
    cursor: Mapped[str] = mapped_column(Text, default="", server_default="")


class JobRow(Base):
    """One operation on one file (ingest, or re-embed into a new embedding space), durable: a
    restarted server picks up what was queued or running."""

    __tablename__ = "jobs"
    # A claim walks the queue user by user, oldest first (jobs/picking.py); jobs to run
    # alone are found apart.
    __table_args__ = (
        Index("ix_jobs_queue", "state", "added_by", "created_at"),
        # Partial, so that the claims of shared jobs never take it for a scan of the queue.
        Index(
            "ix_jobs_alone",
            "state",
            "created_at",
            sqlite_where=text("run_alone = 1"),
            postgresql_where=text("run_alone"),
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    batch_id: Mapped[str] = mapped_column(String(32), index=True)
    kb_id: Mapped[str] = mapped_column(String(32), index=True)
    operation: Mapped[str] = mapped_column(String(20), default="ingest")
    name: Mapped[str] = mapped_column(String(500))
    key: Mapped[str] = mapped_column(String(1000))  # the file's path in the KB
    state: Mapped[str] = mapped_column(String(20), index=True, default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    last_error: Mapped[str] = mapped_column(Text, default="")
    error_code: Mapped[str] = mapped_column(String(50), default="")
    file_id: Mapped[str] = mapped_column(String(32), default="")
    claim: Mapped[str] = mapped_column(String(32), default="", index=True)
    not_before: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)
    finished_at: Mapped[float] = mapped_column(Float, default=0.0)
    added_by: Mapped[str] = mapped_column(String(32), default="", server_default="")
    # A running job is its worker's until then; the worker renews it while alive, and any
    # worker may queue the job again once it has passed (a killed worker's jobs).
    lease_until: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    holder: Mapped[str] = mapped_column(String(300), default="", server_default="")
    # Lost with its worker while other jobs ran beside it: which one killed the worker is
    # unknown, so each such job is claimed by itself until it ends (jobs/store.py).
    run_alone: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class RateBucketRow(Base):
    """A key's request budget when several processes share it (auth/rate_limit.py)."""

    __tablename__ = "rate_buckets"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    last: Mapped[float] = mapped_column(Float)


class ChangeCounterRow(Base):
    """One row whose number SQLite triggers raise on every change to the tables a request
    reads (keys, users, groups, grants, KBs, links, files): processes keep what they read
    from those while the number stands (db/changes.py). Not used on PostgreSQL."""

    __tablename__ = "change_counter"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    n: Mapped[int] = mapped_column(Integer, default=0)


class EmbeddingSpaceRow(Base):
    """An embedding space: one model at one dimension, with its own chunk table. One is
    active (searched); while the model changes, a second one is built and then takes over."""

    __tablename__ = "embedding_spaces"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the chunk table's name
    model_id: Mapped[str] = mapped_column(String(500))
    dimension: Mapped[int] = mapped_column(Integer)
    config: Mapped[str] = mapped_column(Text)  # the embedding settings, JSON, to rebuild it
    state: Mapped[str] = mapped_column(String(20), index=True)  # active, building, retired
    batch_id: Mapped[str] = mapped_column(String(32), default="")  # its re-embed jobs
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    changed_at: Mapped[float] = mapped_column(Float, default=time.time)


class UserRow(Base):
    """A person or service that signs in; 'admin' manages users and sees every KB."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(20), default="user")  # admin or user
    password_hash: Mapped[str] = mapped_column(Text, default="")  # argon2; empty: keys only
    disabled: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class ApiKeyRow(Base):
    """An API key: only its SHA-256 is kept (keys are random, so a slow hash adds nothing);
    the prefix lets a user tell keys apart. Optionally limited to some KBs and to reading."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    kb_ids: Mapped[str] = mapped_column(Text, default="")  # comma-separated; empty: no limit
    read_only: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    last_used_at: Mapped[float] = mapped_column(Float, default=0.0)
    revoked_at: Mapped[float] = mapped_column(Float, default=0.0)
    expires_at: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")  # 0: never


class GroupRow(Base):
    __tablename__ = "groups"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class GroupMemberRow(Base):
    __tablename__ = "group_members"

    group_id: Mapped[str] = mapped_column(
        ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    # "" : an admin added the member; "oidc" / "ldap" / "header": the identity provider
    # did at a sign-in, and the next sign-in through it may take the membership away.
    via: Mapped[str] = mapped_column(String(20), default="", server_default="")


class IdentityRow(Base):
    """An identity at a provider (OIDC issuer + sub, LDAP server + DN, a proxy's user name)
    linked to the Citewell user it signs in as."""

    __tablename__ = "user_identities"
    __table_args__ = (UniqueConstraint("method", "issuer", "subject", name="uq_identity"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    method: Mapped[str] = mapped_column(String(20))  # oidc, ldap or header
    issuer: Mapped[str] = mapped_column(String(500))
    subject: Mapped[str] = mapped_column(String(500))
    email: Mapped[str] = mapped_column(String(320), default="")
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    last_seen_at: Mapped[float] = mapped_column(Float, default=time.time)


class SignInStateRow(Base):
    """One browser's sign-in in flight at an OpenID provider (the ``state`` it carries, with
    the nonce and PKCE verifier), then the one-time ticket the page trades for its key.
    Deleted when used: a second use of either finds nothing."""

    __tablename__ = "sign_in_states"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)  # the state or ticket
    kind: Mapped[str] = mapped_column(String(20))  # "state" or "ticket"
    data: Mapped[str] = mapped_column(Text, default="")  # JSON
    expires_at: Mapped[float] = mapped_column(Float, index=True)


class GrantRow(Base):
    """Read or write access to a KB for a user ('user:<id>'), a group ('group:<id>') or every
    signed-in user ('public'). The KB's owner and admins need no grant."""

    __tablename__ = "kb_grants"

    kb_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    principal: Mapped[str] = mapped_column(String(300), primary_key=True, index=True)
    permission: Mapped[str] = mapped_column(String(10))  # read or write
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class AuditRow(Base):
    """Who created, changed, deleted or shared what, and when. Names, never document text."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Float, default=time.time, index=True)
    actor_id: Mapped[str] = mapped_column(String(32), default="")
    actor: Mapped[str] = mapped_column(String(200), default="")
    action: Mapped[str] = mapped_column(String(50), index=True)
    target_type: Mapped[str] = mapped_column(String(30))
    target_id: Mapped[str] = mapped_column(String(64))
    detail: Mapped[str] = mapped_column(Text, default="")  # JSON


class ModelPresetRow(Base):
    """A model preset made over the API: ``name`` is the model name clients use. Unique per
    owner, like KB names, so a taken name tells nobody that another user has it."""

    __tablename__ = "model_presets"
    __table_args__ = (UniqueConstraint("owner_id", "name", name="uq_preset_owner_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), index=True)
    owner_id: Mapped[str] = mapped_column(String(32), default="")
    config: Mapped[str] = mapped_column(Text, default="{}")  # JSON: the preset's fields
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)


class PresetGrantRow(Base):
    """Use ('read') or change ('write') a preset, granted as KB grants are."""

    __tablename__ = "model_preset_grants"

    preset_id: Mapped[str] = mapped_column(
        ForeignKey("model_presets.id", ondelete="CASCADE"), primary_key=True
    )
    principal: Mapped[str] = mapped_column(String(300), primary_key=True, index=True)
    permission: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class EmbeddingCacheRow(Base):
    """Vectors by (model, sha256 of the text), in the database when it is PostgreSQL (every
    worker on every host shares them); the embedded mode keeps them in embeddings.sqlite."""

    __tablename__ = "embedding_cache"

    model: Mapped[str] = mapped_column(String(500), primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class RuntimeSettingRow(Base):
    """A setting an admin changed at run time (over the API): it overrides the value from the
    environment or config file until it is reset. Every process reads the table."""

    __tablename__ = "runtime_settings"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)  # JSON
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)
    updated_by: Mapped[str] = mapped_column(String(32), default="")


class ServerSecretRow(Base):
    """Keys the server makes for itself once (catalog.file_ids); never shown by any API."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))


class ChunkContextRow(Base):
    """What the LLM wrote for contextual retrieval: a chunk's context (``chunk_hash`` set) or
    a document's summary (``chunk_hash`` ""). Keyed by what made it (document, chunk,
    prompt, model), so ingesting the same text again costs no LLM call; also read when a
    model switch re-embeds chunks, so their vectors keep their context."""

    __tablename__ = "chunk_contexts"
    __table_args__ = (Index("ix_chunk_contexts_doc_chunk", "doc_hash", "chunk_hash"),)

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_hash: Mapped[str] = mapped_column(String(64))
    chunk_hash: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
