"""Which folders on the server's disk connectors may read, and for whom.

``connector_allowed_paths`` lists entries ``PATH=WHO``, comma-separated; WHO is ``*`` (every
user), user names and ``@group`` names, separated by ``|``. A bare ``PATH`` is for admins
only. A folder is readable for a connector's owner when it lies under a path granted to
them. Whatever the grants, no connector reads a folder that holds or lies inside
Citewell's own data (the data dir, with its files, database and connector clones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from citewell.errors import Forbidden, InvalidInput
from citewell.sources.connectors.entries import Reader, SyncRequest


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class FolderGrant:
    """One granted folder: ``everyone``, or the users and groups named."""

    root: Path
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    everyone: bool = False

    def allows(self, reader: Reader) -> bool:
        return (
            reader.admin
            or self.everyone
            or reader.name in self.users
            or bool(self.groups & reader.groups)
        )


def _grant(entry: str) -> FolderGrant:
    path, _, who = entry.partition("=")
    names = [n.strip() for n in who.split("|") if n.strip()]
    root = Path(path.strip()).expanduser().resolve()
    users = frozenset(n for n in names if not n.startswith("@") and n != "*")
    groups = frozenset(n[1:] for n in names if n.startswith("@"))
    return FolderGrant(root, users, groups, "*" in names)


@dataclass(frozen=True)
class FolderGrants:
    """``connector_allowed_paths`` parsed, and the folders no connector may read."""

    grants: tuple[FolderGrant, ...] = ()
    protected: tuple[Path, ...] = ()

    @classmethod
    def parse(cls, setting: str, protected: Sequence[Path] = ()) -> FolderGrants:
        entries = [e.strip() for e in setting.split(",") if e.strip()]
        kept = tuple(p.expanduser().resolve() for p in protected)
        return cls(tuple(_grant(e) for e in entries), kept)

    @property
    def roots(self) -> tuple[Path, ...]:
        return tuple(g.root for g in self.grants)

    def check(self, target: str, request: SyncRequest) -> Path:
        """The folder ``target`` names, resolved, if ``request``'s owner may read it (else
        InvalidInput for a bad path, Forbidden for one not granted; both say what to do)."""
        if not target or "\0" in target:
            raise InvalidInput("Name a folder on the server, e.g. /srv/docs.")
        path = Path(target).expanduser()
        if not path.is_absolute():
            raise InvalidInput(f"{target!r} is not an absolute path; name the folder from '/'.")
        resolved = path.resolve()
        if any(inside(resolved, p) or inside(p, resolved) for p in self.protected):
            raise Forbidden(
                f"{target!r} holds or lies inside Citewell's own data (its data directory): "
                "no connector may read it. Name a folder beside it."
            )
        if not request.trusted and not self._granted(resolved, request.reader):
            raise Forbidden(
                f"{target!r} is not under a folder that connectors may read for you; an admin "
                "grants folders to users and groups in the setting connector_allowed_paths."
            )
        if not resolved.is_dir():
            raise InvalidInput(f"{target!r} is not a folder on the server; check the path.")
        return resolved

    def _granted(self, path: Path, reader: Reader | None) -> bool:
        if reader is None:
            return False
        return any(inside(path, g.root) and g.allows(reader) for g in self.grants)
