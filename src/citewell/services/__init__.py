"""Services: one per resource, each operation taking the caller's view (``Scoped``: their
access) and checking it itself. HTTP routes, the CLI and adapters to come translate to and
from these; they do not reach the stores, catalog, jobs or database behind them."""
