"""The SSRF guard's address policy, and the URL forms that reach it."""

import pytest

from citewell.errors import FetchFailed, InvalidInput, UrlBlocked
from citewell.fetch import AddressGuard, check_url, video_id

BLOCKED = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "fe80::1",
    "fc00::1",
    "::ffff:127.0.0.1",  # IPv4-mapped loopback
    "::ffff:10.0.0.1",
    "2002:7f00:1::",  # 6to4 wrapping 127.0.0.1
]


@pytest.mark.parametrize("address", BLOCKED)
def test_non_public_addresses_are_refused(address):
    with pytest.raises(UrlBlocked, match="web_fetch_allowlist"):
        AddressGuard().check("example.org", address)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    AddressGuard().check("example.org", address)


def test_allowlist_by_address_network_and_host():
    guard = AddressGuard.from_allowlist(["127.0.0.1", "10.0.0.0/8", "Wiki.Internal."])
    guard.check("anything", "127.0.0.1")
    guard.check("anything", "10.20.30.40")
    guard.check("wiki.internal", "192.168.5.5")  # the host is trusted, wherever it points
    with pytest.raises(UrlBlocked):
        guard.check("anything", "192.168.5.5")
    with pytest.raises(UrlBlocked):
        guard.check("anything", "127.0.0.2")


def test_allow_private_lets_everything_through():
    AddressGuard(allow_private=True).check("x", "169.254.169.254")


def test_a_name_with_one_private_address_is_refused():
    """A name resolving to a public and a private address (DNS rebinding's usual trick)."""
    guard = AddressGuard(resolver=lambda host, port: ["93.184.216.34", "10.0.0.5"])
    with pytest.raises(UrlBlocked, match="10.0.0.5"):
        guard.resolve("rebind.example", 80)
    assert AddressGuard(resolver=lambda h, p: ["93.184.216.34"]).resolve("ok.example", 80)


def test_a_name_that_does_not_resolve_is_refused():
    def fail(host, port):
        raise OSError("Name or service not known")

    with pytest.raises(FetchFailed, match="does not resolve"):
        AddressGuard(resolver=fail).resolve("nowhere.invalid", 80)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/x", "gopher://x", "example.org", "http://"]
)
def test_only_http_urls_are_fetched(url):
    with pytest.raises(InvalidInput, match="http"):
        check_url(url)


@pytest.mark.parametrize("url", ["http://[bad", "http://x/\x00", "https://\u2603.com/"])
def test_malformed_urls_are_invalid_input(url):
    from citewell.fetch import FetchLimits, UrlFetcher

    with pytest.raises(InvalidInput, match="not a valid URL"):
        UrlFetcher(AddressGuard(), FetchLimits()).fetch(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        "https://youtube.com/watch?v=dQw4w9WgXcQ&t=42s&list=PL123",
        "http://m.youtube.com/watch?feature=share&v=dQw4w9WgXcQ",
        "https://music.youtube.com/watch?v=dQw4w9WgXcQ",
        "https://youtu.be/dQw4w9WgXcQ",
        "https://youtu.be/dQw4w9WgXcQ?si=abc&t=10",
        "https://www.youtube.com/embed/dQw4w9WgXcQ?start=5",
        "https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ",
        "https://www.youtube.com/shorts/dQw4w9WgXcQ",
        "https://www.youtube.com/live/dQw4w9WgXcQ?feature=shared",
        "https://www.youtube.com/v/dQw4w9WgXcQ",
        "https://www.youtube.com/attribution_link?u=/watch%3Fv%3DdQw4w9WgXcQ%26feature%3Dshare",
        "youtube.com/watch?v=dQw4w9WgXcQ",
    ],
)
def test_every_youtube_url_form_gives_the_video_id(url):
    assert video_id(url) == "dQw4w9WgXcQ"


@pytest.mark.parametrize(
    "url",
    [
        "https://www.youtube.com/",
        "https://www.youtube.com/watch?v=short",
        "https://www.youtube.com/channel/UCabcdefghijk",
        "https://notyoutube.com/watch?v=dQw4w9WgXcQ",
        "https://example.org/watch?v=dQw4w9WgXcQ",
        "http://[youtube.com/watch?v=dQw4w9WgXcQ",  # not a URL (found by schemathesis)
    ],
)
def test_other_urls_are_not_videos(url):
    assert video_id(url) is None
