"""The registry every role shares: built-ins, plug-ins from entry points, and what a user is
told when a name is unknown or a plug-in is broken."""

from types import SimpleNamespace

import pytest

from citewell import plugins
from citewell.config import BUILTIN_BACKENDS, Settings
from citewell.errors import ConfigError
from citewell.plugins import ROLES, Registry


def fake_entry_points(monkeypatch, group, **loaders):
    def entry_points(group: str):
        return (
            [SimpleNamespace(name=n, load=f) for n, f in loaders.items()] if group == want else []
        )

    want = group
    monkeypatch.setattr(plugins, "entry_points", entry_points)


def test_built_ins_then_plug_ins(monkeypatch):
    fake_entry_points(monkeypatch, "citewell.rerankers", mine=lambda: lambda s: "mine")
    registry = Registry("rerankers")
    registry.add("none", lambda s: None)
    assert registry.names() == ("none", "mine") and registry.plugins() == ("mine",)
    assert registry.get("mine")(None) == "mine" and "mine" in registry


def test_an_unknown_name_lists_what_there_is_and_how_to_add_one(monkeypatch):
    fake_entry_points(monkeypatch, "citewell.embedders")
    registry = Registry("embedders")
    registry.add("onnx", lambda s: None)
    with pytest.raises(
        ConfigError, match=r"embedding_engine = 'bert' .* Known: onnx.*citewell\.embedders"
    ):
        registry.get("bert")


def test_a_broken_plug_in_is_named_not_fatal(monkeypatch):
    def broken():
        raise ImportError("No module named 'torch'")

    fake_entry_points(monkeypatch, "citewell.loaders", fancy=broken)
    registry = Registry("loaders")
    registry.add("text", lambda c: None)
    assert registry.names() == ("text",)  # the server still starts
    with pytest.raises(ConfigError, match="fancy.*could not be loaded.*torch"):
        registry.get("fancy")


def test_a_plug_in_may_not_take_a_built_in_name(monkeypatch):
    fake_entry_points(monkeypatch, "citewell.llm", openai=lambda: lambda s: "impostor")
    registry = Registry("llm")
    registry.add("openai", lambda s: "real")
    assert registry.get("openai")(None) == "real" and registry.plugins() == ()


def test_a_name_is_registered_once():
    registry = Registry("ocr")
    registry.add("tesseract", lambda *a: None)
    with pytest.raises(ValueError, match="twice"):
        registry.add("tesseract", lambda *a: None)


def test_roles_are_the_documented_ones():
    with pytest.raises(ValueError, match="unknown role"):
        Registry("vector_dbs")
    assert {r for r, setting in ROLES.items() if setting} == set(BUILTIN_BACKENDS)


def test_settings_accept_an_installed_plug_in_name(monkeypatch, tmp_path):
    fake_entry_points(monkeypatch, "citewell.embedders", bert=lambda: None)
    assert (
        Settings.load(data_dir=tmp_path, embedding_engine="bert").embedding.embedding_engine
        == "bert"
    )
    with pytest.raises(ConfigError, match="embedding_engine = 'bart'.*'bert'"):
        Settings.load(data_dir=tmp_path, embedding_engine="bart")


@pytest.mark.parametrize("role", [r for r, setting in ROLES.items() if setting])
def test_every_settings_value_is_a_built_in_or_a_special_word(role):
    from citewell.blobs.registry import FILE_STORES
    from citewell.embedders.registry import EMBEDDERS
    from citewell.llm.registry import LLMS
    from citewell.loaders.ocr import OCR_ENGINES
    from citewell.rerankers.registry import RERANKERS
    from citewell.splitters.registry import SPLITTERS
    from citewell.stores.registry import CHUNK_STORES
    from citewell.websearch.registry import WEB_SEARCHES

    registries = {
        "ocr": OCR_ENGINES,
        "splitters": SPLITTERS,
        "embedders": EMBEDDERS,
        "rerankers": RERANKERS,
        "llm": LLMS,
        "web_search": WEB_SEARCHES,
        "chunk_stores": CHUNK_STORES,
        "file_stores": FILE_STORES,
    }
    special = {"auto", "off", ""}
    assert set(BUILTIN_BACKENDS[role]) - special == set(registries[role].names()) - special
