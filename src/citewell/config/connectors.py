"""The ``connectors`` section: sources a knowledge base keeps in sync with."""

from __future__ import annotations

from citewell.config.fields import Section, setting


class ConnectorSection(Section):
    """Connectors: folders, git repositories and other sources kept in sync with a KB."""

    connector_allowed_paths: str = setting(
        "",
        "Folders on the server's disk that connectors made over the API may read (folder "
        "connectors, and git repositories given as a local path), and for whom: comma-"
        "separated entries PATH=WHO, where WHO is '*' (every user) or user names and @group "
        "names separated by '|', e.g. '/srv/sales=@sales|alice, /srv/public=*'. A bare PATH "
        "is for admins only. A connector reads with its owner's grants, checked at every "
        "sync. Empty: none; only the local operator (the CLI without a server) syncs other "
        "folders. No connector reads a folder holding or inside the data dir, whatever the "
        "grants; symlinks that lead out of a folder are not followed.",
    )

    connector_interval: float = setting(
        3600.0,
        "Seconds between a connector's full syncs unless it names its own interval. A folder "
        "connector that watches for changes still rescans this often (a watch can miss "
        "events).",
        gt=0,
    )

    connector_watch: bool = setting(
        True,
        "Watch the folders of folder connectors for changes (in the process that runs jobs) "
        "and sync a folder within seconds of a change. The full rescan every interval runs "
        "anyway.",
    )

    connector_min_interval: float = setting(
        60.0,
        "The shortest interval a connector may ask for (each sync lists its whole source).",
        gt=0,
    )

    connector_secret_key: str = setting(
        "",
        "Key that encrypts connector credentials at rest (any string; keep it secret and the "
        "same on every process). Empty: the server makes one and keeps it in its database.",
    )
