"""What the ``citewell`` command's modules share: the per-invocation context, the decorator
that passes it, and CitewellError shown as a click error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from citewell.errors import CitewellError

if TYPE_CHECKING:  # imported where used: a command loads only what it needs
    from citewell.app import Citewell
    from citewell.app.database import AccountDatabase
    from citewell.engine.scoped import Scoped
    from citewell.services.answers import AnswerService
    from citewell.services.ingest import IngestService
    from citewell.services.knowledge import KnowledgeService
    from citewell.services.search import SearchService

MODES = click.Choice(["hybrid", "vector", "bm25"])


class Context:
    def __init__(self, data_dir: Path | None, config: Path | None) -> None:
        self.data_dir = data_dir
        self.config = config
        self._app: Citewell | None = None

    def app(self, switch_models: bool = False) -> Citewell:
        """The Citewell of this data dir. Only the server and workers (``switch_models``)
        start re-embedding when the settings name another embedding model."""
        if self._app is None:
            from citewell.app import Citewell
            from citewell.config import Settings

            settings = Settings.load(self.config, data_dir=self.data_dir)
            self._app = Citewell.from_settings(settings, switch_models=switch_models)
        return self._app

    def database(self) -> AccountDatabase:
        """The database alone (``AccountDatabase``): for commands that load no model."""
        from citewell.app.database import account_database
        from citewell.config import Settings

        return account_database(Settings.load(self.config, data_dir=self.data_dir))

    def view(self) -> Scoped:
        """The engine as the local operator sees it: the view the services take."""
        from citewell.engine.scoped import Scoped
        from citewell.services.local import OPERATOR

        return Scoped(self.app(), OPERATOR)

    def knowledge(self) -> KnowledgeService:
        """KBs and files as the local operator (``KnowledgeService``): checked and audited
        like any caller's."""
        from citewell.services.knowledge import KnowledgeService

        return KnowledgeService(self.view())

    def searching(self) -> SearchService:
        """Searches as the local operator (``SearchService``)."""
        from citewell.services.search import SearchService

        return SearchService(self.view())

    def answering(self) -> AnswerService:
        """Answers as the local operator (``AnswerService``)."""
        from citewell.services.answers import AnswerService, ModelList

        chat = self.app().chat
        return AnswerService(chat, ModelList(chat), self.view())

    def ingesting(self) -> IngestService:
        """Paths and URLs into KBs as the local operator (``IngestService``)."""
        from citewell.services.ingest import IngestService

        return IngestService(self.view())


@contextmanager
def click_errors() -> Iterator[None]:
    try:
        yield
    except CitewellError as exc:
        raise click.ClickException(f"{exc.message} [{exc.code}]") from exc


pass_app = click.make_pass_decorator(Context)
