"""Answering: the chat pipeline (retrieval injected or tools the model calls), its agent
loop and tools, the gathering and citing of sources, prompts and limits."""
