"""Built-in LLM engines and splitters pass their roles' shipped suites (citewell.testing):
the OpenAI-compatible and Ollama engines against wire-faithful fakes, every splitter."""

import pytest

from citewell.config import Settings
from citewell.llm.registry import LLMS
from citewell.splitters import SPLITTERS, build_measure, build_splitter
from citewell.testing.fakes import FakeHashEmbedder
from citewell.testing.llm import LLMConformance
from citewell.testing.splitters import SplitterConformance
from tests.fake_servers import FakeLLMService, FakeOllamaChat, serve

pytestmark = pytest.mark.conformance


class TestBuiltInLLMEngines(LLMConformance):
    @pytest.fixture(params=["openai", "ollama"])
    def engine(self, request, tmp_path):
        fake = FakeLLMService() if request.param == "openai" else FakeOllamaChat()
        with serve(fake) as url:
            base = url + "/v1" if request.param == "openai" else url
            settings = Settings.load(data_dir=tmp_path, llm_engine=request.param, llm_base_url=base)
            yield LLMS.get(request.param)(settings.llm), fake.models[0]

    @pytest.fixture
    def llm(self, engine):
        return engine[0]

    @pytest.fixture
    def model(self, engine):
        return engine[1]


class TestBuiltInSplitters(SplitterConformance):
    @pytest.fixture(params=list(SPLITTERS))
    def settings(self, request, tmp_path, chunk_size):
        return Settings.load(
            data_dir=tmp_path, text_splitter=request.param, chunk_size=chunk_size, chunk_overlap=20
        )

    @pytest.fixture
    def splitter(self, settings):
        return build_splitter(settings, FakeHashEmbedder(32))

    @pytest.fixture
    def size_of(self, settings):
        return build_measure(settings, FakeHashEmbedder(32)).size  # tokens for "token"
