"""The server's log lines: plain text or one JSON object per line (``log_format``), each
with the trace id and span id of the request or job it belongs to while tracing is on, so a
user's "this answer was slow" (its X-Trace-Id) leads to its log lines as well as its trace.

Uvicorn's own loggers (start-up, access lines) go through the same handler: an access line
is written while the request's span is current, so it carries the trace id too."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

# Libraries that log every request at INFO: quiet unless the operator asks for DEBUG.
CHATTY = (
    "httpx", "httpcore", "mcp", "sse_starlette", "urllib3", "botocore", "boto3",
    "alembic.runtime.plugins",
)  # fmt: skip


class TraceIds(logging.Filter):
    """Adds ``trace_id`` and ``span_id`` ("" outside a trace) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = trace.get_current_span().get_span_context()
        valid = context.is_valid
        record.trace_id = format(context.trace_id, "032x") if valid else ""
        record.span_id = format(context.span_id, "016x") if valid else ""
        return True


class TextLines(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        trace_id = getattr(record, "trace_id", "")
        return f"{line} trace_id={trace_id}" if trace_id else line


class JsonLines(logging.Formatter):
    """One JSON object per line: time (UTC, ms), level, logger, message, trace_id,
    span_id; an access line also method, path and status; an exception as error."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if getattr(record, "trace_id", ""):
            entry["trace_id"], entry["span_id"] = record.trace_id, record.span_id  # type: ignore[attr-defined]
        entry.update(_access_fields(record))
        if record.exc_info and record.exc_info[0] is not None:
            kind, value, _ = record.exc_info
            entry["error"] = {
                "type": kind.__qualname__,
                "message": str(value),
                "stack": self.formatException(record.exc_info),
            }
        return json.dumps(entry, ensure_ascii=False, default=str)


def _access_fields(record: logging.LogRecord) -> dict[str, Any]:
    """Uvicorn's access line (client, method, path, HTTP version, status) as fields."""
    args = record.args
    if record.name != "uvicorn.access" or not isinstance(args, tuple) or len(args) != 5:
        return {}
    client, method, path, _version, status = args
    return {"client": client, "method": method, "path": path, "status": status}


def log_config(level: str, log_format: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for Citewell and uvicorn (also uvicorn's
    ``log_config``, so each of its worker processes sets up the same)."""
    level = level.upper()
    formatter = JsonLines if log_format == "json" else TextLines
    quiet = level if level == "DEBUG" else "WARNING"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"trace_ids": {"()": TraceIds}},
        "formatters": {"lines": {"()": formatter}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "lines",
                "filters": ["trace_ids"],
            }
        },
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": {"handlers": ["stderr"], "level": level, "propagate": False},
            **{name: {"level": quiet} for name in CHATTY},
        },
    }


def set_up_logging(level: str, log_format: str) -> None:
    import logging.config

    logging.config.dictConfig(log_config(level, log_format))
