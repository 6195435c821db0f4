"""YouTube transcripts, read the way YouTube's own player reads them.

Steps: the watch page gives the player API key → the player API (InnerTube) lists the
caption tracks and the title → the chosen track's timed text (XML) is the transcript.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from citewell.errors import FetchFailed, FetchTimeout, NoTranscript
from citewell.tracing.client import traced

VIDEO_ID = re.compile(r"^[A-Za-z0-9_-]{11}$")
API_KEY = re.compile(r'"INNERTUBE_API_KEY":\s*"([A-Za-z0-9_-]+)"')
HOSTS = ("youtube.com", "youtube-nocookie.com", "youtu.be")
PATH_FORMS = ("embed", "shorts", "live", "v", "e")
PLAYER_CLIENT = {"client": {"clientName": "ANDROID", "clientVersion": "20.10.38"}}
PARAGRAPH_SECONDS = 60.0  # transcript lines are grouped into one timestamped paragraph a minute


@dataclass(frozen=True)
class Transcript:
    video_id: str
    url: str
    title: str
    language: str
    text: str  # Markdown: the title as a heading, then "[m:ss] …" paragraphs


def video_id(url: str) -> str | None:
    """The 11-character id of a YouTube video URL in any of its forms, else None."""
    try:
        parts = urlsplit(url.strip() if "//" in url else "https://" + url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:  # not a URL at all (an unclosed '[', a bad port): not a video either
        return None
    if not any(host == h or host.endswith("." + h) for h in HOSTS):
        return None
    segments = [s for s in parts.path.split("/") if s]
    query = parse_qs(parts.query)
    candidate: str | None = None
    if host.endswith("youtu.be"):
        candidate = segments[0] if segments else None
    elif segments[:1] == ["watch"]:
        given = query.get("v") or segments[1:2]
        candidate = given[0] if given else None
    elif len(segments) >= 2 and segments[0] in PATH_FORMS:
        candidate = segments[1]
    elif segments[:1] == ["attribution_link"] and query.get("u"):
        return video_id("https://www.youtube.com" + query["u"][0])
    return candidate if candidate and VIDEO_ID.match(candidate) else None


class YouTubeTranscripts:
    def __init__(self, base_url: str, timeout: float, languages: Sequence[str]) -> None:
        self.base_url = base_url.rstrip("/")
        self.languages = [lang.strip() for lang in languages if lang.strip()]
        self.client = httpx.Client(
            timeout=timeout,
            transport=traced(),
            follow_redirects=True,
            headers={"Accept-Language": "en-US,en;q=0.9", "User-Agent": "Mozilla/5.0"},
        )

    def close(self) -> None:
        self.client.close()

    def transcript(self, url: str, languages: Sequence[str] = ()) -> Transcript:
        vid = video_id(url)
        if vid is None:
            raise NoTranscript(f"{url} is not a YouTube video URL.")
        player = self._player(vid)
        title = str(player.get("videoDetails", {}).get("title") or vid)
        track = self._track(vid, player, [*languages, *self.languages])
        text = _markdown(title, self._segments(track["baseUrl"]))
        if not text.strip():
            raise NoTranscript(f"The transcript of video {vid} is empty.")
        watch = f"https://www.youtube.com/watch?v={vid}"
        return Transcript(vid, watch, title, str(track.get("languageCode", "")), text)

    def _player(self, vid: str) -> dict[str, Any]:
        page = self._get(f"{self.base_url}/watch", params={"v": vid}).text
        if 'action="https://consent.youtube.com/s"' in page:  # EU consent wall: accept, retry
            host = urlsplit(self.base_url).hostname or ""
            self.client.cookies.set("CONSENT", "YES+cb", domain=host)
            page = self._get(f"{self.base_url}/watch", params={"v": vid}).text
        key = API_KEY.search(page)
        if key is None:
            blocked = "g-recaptcha" in page
            raise FetchFailed(
                "YouTube asked for a captcha: too many requests from this server's address; "
                "try again later."
                if blocked
                else f"YouTube's page for video {vid} did not contain its player settings."
            )
        body = {"context": PLAYER_CLIENT, "videoId": vid}
        player: dict[str, Any] = self._request(
            "POST", f"{self.base_url}/youtubei/v1/player", params={"key": key.group(1)}, json=body
        ).json()
        status = player.get("playabilityStatus", {})
        if status.get("status", "OK") != "OK":
            reason = status.get("reason") or status.get("status")
            raise NoTranscript(f"Video {vid} cannot be played here ({reason}); no transcript.")
        return player

    def _track(self, vid: str, player: dict[str, Any], languages: list[str]) -> dict[str, Any]:
        renderer = player.get("captions", {}).get("playerCaptionsTracklistRenderer", {})
        tracks: list[dict[str, Any]] = renderer.get("captionTracks") or []
        if not tracks:
            raise NoTranscript(
                f"Video {vid} has no transcript: its owner turned captions off and YouTube "
                "made none."
            )
        # Preferred languages in order; for each, captions written by people before generated.
        for language in languages:
            for generated in (False, True):
                for track in tracks:
                    if _language_matches(track, language) and (track.get("kind") == "asr") is (
                        generated
                    ):
                        return track
        return tracks[0]

    def _segments(self, track_url: str) -> list[tuple[float, str]]:
        raw = self._get(track_url.replace("&fmt=srv3", "")).content
        try:
            root = ET.fromstring(raw)
        except ET.ParseError as exc:
            raise FetchFailed(f"YouTube's transcript was not valid XML ({exc}).") from exc
        segments = []
        for element in root.iter():
            if element.tag == "text":  # <text start="s" dur="s">
                start = float(element.get("start") or 0)
            elif element.tag == "p":  # srv3: <p t="ms" d="ms">
                start = float(element.get("t") or 0) / 1000
            else:
                continue
            line = " ".join(html.unescape("".join(element.itertext())).split())
            if line:
                segments.append((start, line))
        return segments

    def _get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self._request("GET", url, **kwargs)

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            raise FetchTimeout(f"YouTube did not answer in time ({exc}); try again.") from exc
        except httpx.HTTPError as exc:
            raise FetchFailed(f"Could not reach YouTube: {exc}.") from exc
        if response.status_code == 429:
            raise FetchFailed("YouTube is rate-limiting this server (429); try again later.")
        if response.status_code >= 400:
            raise FetchFailed(f"YouTube answered {response.status_code} for {method} {url}.")
        return response


def _language_matches(track: dict[str, Any], language: str) -> bool:
    code = str(track.get("languageCode", "")).lower()
    wanted = language.lower()
    return code == wanted or code.split("-")[0] == wanted


def _markdown(title: str, segments: list[tuple[float, str]]) -> str:
    paragraphs: list[str] = []
    current: list[str] = []
    started = 0.0
    for start, line in segments:
        if current and start - started >= PARAGRAPH_SECONDS:
            paragraphs.append(f"[{_clock(started)}] " + " ".join(current))
            current = []
        if not current:
            started = start
        current.append(line)
    if current:
        paragraphs.append(f"[{_clock(started)}] " + " ".join(current))
    if not paragraphs:
        return ""
    return f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"


def _clock(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
