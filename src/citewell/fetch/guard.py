"""The SSRF guard: which addresses a user-supplied URL may reach.

The check happens where the socket is opened, on the address actually connected to, so it
holds for every redirect hop and cannot be dodged by a name that resolves to a public address
when checked and to a private one when used (DNS rebinding): the name is resolved once, every
address is checked, and the connection goes to a checked address.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

from citewell.errors import FetchFailed, UrlBlocked

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class AddressGuard:
    """Public addresses pass; private, loopback, link-local and reserved ones only when
    allowed (by host name, address or network) or when ``allow_private`` is set."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    allow_private: bool = False
    resolver: Resolver = field(default=system_resolver, compare=False)

    @classmethod
    def from_allowlist(cls, entries: Iterable[str], allow_private: bool = False) -> AddressGuard:
        hosts, networks = set(), []
        for entry in (e.strip().lower() for e in entries):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.rstrip("."))
        return cls(frozenset(hosts), tuple(networks), allow_private)

    def check(self, host: str, address: str) -> None:
        """Raise UrlBlocked unless ``host`` may be reached at ``address``."""
        ip = _unmapped(ipaddress.ip_address(address.split("%", 1)[0]))
        public = ip.is_global and not ip.is_multicast
        if self.allow_private or public or host.lower().rstrip(".") in self.hosts:
            return
        if any(ip in network for network in self.networks):
            return
        raise UrlBlocked(
            f"{host} resolves to {ip}, a private, loopback or link-local address, which URL "
            "fetches may not reach. If this server is meant to read it, add the host or its "
            "network to web_fetch_allowlist (CITEWELL_WEB_FETCH_ALLOWLIST)."
        )

    def resolve(self, host: str, port: int) -> list[str]:
        """Every address of ``host``, each checked; refused if any one is not allowed."""
        try:
            addresses = self.resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise FetchFailed(f"{host} does not resolve ({exc}); check the URL.") from exc
        if not addresses:
            raise FetchFailed(f"{host} does not resolve; check the URL.")
        for address in addresses:
            self.check(host, address)
        return addresses


def _unmapped(ip: IPAddress) -> IPAddress:
    """::ffff:10.0.0.1 is 10.0.0.1: judge IPv4-mapped and 6to4-wrapped addresses by the v4 one."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
    return ip


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's socket layer, connecting only to addresses the guard accepts."""

    def __init__(self, guard: AddressGuard) -> None:
        self.guard = guard
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self.guard.resolve(host, port)
        error: Exception | None = None
        for address in addresses:  # TLS still verifies the name: httpcore passes it as SNI
            try:
                return self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        assert error is not None
        raise error

    def connect_unix_socket(
        self,
        path: str,  # noqa: ARG002 (httpcore's signature)
        timeout: float | None = None,  # noqa: ARG002
        socket_options: Iterable[Any] | None = None,  # noqa: ARG002
    ) -> httpcore.NetworkStream:
        raise UrlBlocked("Unix sockets cannot be fetched.")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over the guarded socket layer. Proxies are not used: a proxy would
    connect on our behalf, out of the guard's sight."""

    def __init__(self, guard: AddressGuard) -> None:
        super().__init__()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=GuardedBackend(guard)
        )
