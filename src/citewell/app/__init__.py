"""The application root: builds every part once from the settings (``assemble``) and the
``Citewell`` object adapters use: the engine with answering on top (``application``)."""

from citewell.app.application import Citewell
from citewell.app.assemble import prepare_database

__all__ = ["Citewell", "prepare_database"]
