"""Prompt templates. Placeholders follow Open WebUI: [context]/{{CONTEXT}}, [query]/{{QUERY}}."""

from __future__ import annotations

DEFAULT_RAG_TEMPLATE = """### Task
Answer the user's question using the sources in <context> below.

### Rules
- Cite every statement that rests on a source with its number in square brackets, e.g. [1] \
or [2][3], right after the statement.
- Cite only numbers that appear as <source id="..."> below; never cite a source without an id \
and never invent one.
- If the sources do not contain the answer, say so plainly, then answer from general knowledge \
only if you are sure, without citations.
- Answer in the language of the user's question.
- Keep the answer focused; do not repeat the sources verbatim at length.

<context>
{{CONTEXT}}
</context>

<question>
{{QUERY}}
</question>"""

DEFAULT_QUERY_TEMPLATE = """### Task
Write 1 to 3 short search queries that would find the documents needed to answer the \
user's latest message, using the conversation below for context (resolve pronouns, keep \
names and numbers). Write them in the conversation's language.

### Output
Only JSON, exactly of this form: {"queries": ["first query", "second query"]}

### Conversation
{{MESSAGES}}"""


def render_rag_template(template: str, context: str, query: str) -> str:
    template = template if template.strip() else DEFAULT_RAG_TEMPLATE
    for key in ("[context]", "{{CONTEXT}}"):
        template = template.replace(key, context)
    for key in ("[query]", "{{QUERY}}"):
        template = template.replace(key, query)
    return template


def render_query_prompt(template: str, history: str) -> str:
    template = template if template.strip() else DEFAULT_QUERY_TEMPLATE
    return template.replace("{{MESSAGES}}", history)
