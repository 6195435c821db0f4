from citewell.llm.base import LLM, ChatMessage, Completion, Delta, Usage
from citewell.llm.openai_compat import OpenAICompatibleLLM

__all__ = ["LLM", "ChatMessage", "Completion", "Delta", "OpenAICompatibleLLM", "Usage"]
