"""Remote sources: web pages behind the SSRF guard, and YouTube transcripts."""

from citewell.fetch.guard import AddressGuard
from citewell.fetch.pages import FetchedPage, FetchLimits, UrlFetcher, check_url
from citewell.fetch.youtube import Transcript, YouTubeTranscripts, video_id

__all__ = [
    "AddressGuard",
    "FetchLimits",
    "FetchedPage",
    "Transcript",
    "UrlFetcher",
    "YouTubeTranscripts",
    "check_url",
    "video_id",
]
