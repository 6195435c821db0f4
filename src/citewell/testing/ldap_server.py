"""A real LDAP directory for tests: Debian's ``slapd`` with a temporary configuration, on
127.0.0.1, serving LDAP (with StartTLS) and LDAPS with a throwaway CA, the memberOf overlay
on, and seeded with people and groups through ``ldap3``. As root, slapd runs as ``nobody``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citewell.testing.certs import TestCertificates, make_certificates
from citewell.testing.processes import free_port, log_of, run_as_unprivileged, stop, wait_listening

SUFFIX = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "directory-admin-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


@dataclass(frozen=True)
class Person:
    uid: str
    password: str
    name: str
    groups: tuple[str, ...] = ()

    @property
    def dn(self) -> str:
        return f"uid={self.uid},{PEOPLE}"


def group_dn(name: str) -> str:
    return f"cn={name},{GROUPS}"


def _config(root: Path, certificates: TestCertificates) -> str:
    lines = [f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS]
    lines += [
        "modulepath /usr/lib/ldap",
        "moduleload back_mdb",
        "moduleload memberof",
        f"pidfile {root}/slapd.pid",
        f"TLSCACertificateFile {certificates.ca}",
        f"TLSCertificateFile {certificates.certificate}",
        f"TLSCertificateKeyFile {certificates.key}",
        "database mdb",
        "maxsize 16777216",
        f'suffix "{SUFFIX}"',
        f'rootdn "{ADMIN_DN}"',
        f"rootpw {ADMIN_PASSWORD}",
        f"directory {root}/db",
        "overlay memberof",
        # People may read the directory once bound; nobody reads passwords but to bind.
        "access to attrs=userPassword by anonymous auth by * none",
        "access to * by users read by anonymous auth",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class LdapServer:
    """``start()`` it, ``seed()`` people, ``stop()`` it. ``url``: plain LDAP (StartTLS
    offered); ``ldaps_url``: LDAP over TLS. ``certificates.ca`` is the CA to trust."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="citewell-ldap-")))
    port: int = field(default_factory=free_port)
    tls_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.certificates = make_certificates(self.root)

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def start(self) -> None:
        slapd = shutil.which("slapd") or "/usr/sbin/slapd"
        if not Path(slapd).exists():
            raise RuntimeError("The LDAP tests need slapd: run scripts/setup-identity.")
        (self.root / "db").mkdir()
        config = self.root / "slapd.conf"
        config.write_text(_config(self.root, self.certificates))
        user = run_as_unprivileged(self.root)
        urls = f"{self.url}/ {self.ldaps_url}/"
        log = (self.root / "slapd.log").open("wb")
        self.process = subprocess.Popen(
            [slapd, "-d", "0", "-f", str(config), "-h", urls],
            stdout=log,
            stderr=subprocess.STDOUT,
            user=user,
        )
        wait_listening(self.process, self.port, "slapd", log_of(self.root / "slapd.log"))

    def settings(self) -> dict[str, str]:
        """Citewell's settings for signing in against this directory (StartTLS, its CA)."""
        return {
            "ldap_url": self.url,
            "ldap_ca_file": str(self.certificates.ca),
            "ldap_bind_dn": ADMIN_DN,
            "ldap_bind_password": ADMIN_PASSWORD,
            "ldap_search_base": PEOPLE,
        }

    def admin(self) -> Any:
        """A connection bound as the directory's administrator."""
        import ldap3

        server = ldap3.Server(self.url)
        return ldap3.Connection(server, ADMIN_DN, ADMIN_PASSWORD, auto_bind=True)

    def seed(self, people: list[Person]) -> None:
        """The base entries, ``people``, and one group per group name they hold."""
        connection = self.admin()
        connection.add(SUFFIX, ["dcObject", "organization"], {"o": "Example", "dc": "example"})
        for unit in (PEOPLE, GROUPS):
            connection.add(unit, ["organizationalUnit"], {"ou": unit.split(",")[0][3:]})
        for person in people:
            self.add_person(person, connection)
        names = sorted({g for person in people for g in person.groups})
        for name in names:
            # groupOfNames needs a member; the administrator keeps every group non-empty.
            members = [ADMIN_DN, *(p.dn for p in people if name in p.groups)]
            connection.add(group_dn(name), ["groupOfNames"], {"cn": name, "member": members})
            _check(connection)
        connection.unbind()

    def add_person(self, person: Person, connection: Any = None) -> None:
        own = connection or self.admin()
        attributes = {
            "uid": person.uid,
            "cn": person.name,
            "sn": person.name.split()[-1],
            "mail": f"{person.uid}@example.org",
            "userPassword": person.password,
        }
        own.add(person.dn, ["inetOrgPerson"], attributes)
        _check(own)

    def add_to_group(self, uid: str, group: str) -> None:
        import ldap3

        connection = self.admin()
        change = {"member": [(ldap3.MODIFY_ADD, [f"uid={uid},{PEOPLE}"])]}
        connection.modify(group_dn(group), change)
        _check(connection)
        connection.unbind()

    def remove_from_group(self, uid: str, group: str) -> None:
        import ldap3

        connection = self.admin()
        change = {"member": [(ldap3.MODIFY_DELETE, [f"uid={uid},{PEOPLE}"])]}
        connection.modify(group_dn(group), change)
        _check(connection)
        connection.unbind()

    def remove_person(self, uid: str) -> None:
        connection = self.admin()
        connection.delete(f"uid={uid},{PEOPLE}")
        _check(connection)
        connection.unbind()

    def stop(self) -> None:
        stop(self.process)
        shutil.rmtree(self.root, ignore_errors=True)


def _check(connection: Any) -> None:
    if connection.result["result"] != 0:
        raise RuntimeError(f"the LDAP server refused a change: {connection.result}")
