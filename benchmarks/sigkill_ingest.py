"""Crash test: queue many files through the API, SIGKILL the server at random moments while it
ingests them, restart it each time, then check that every file was indexed exactly once
(the scenario is citewell.testing.crash_run; the end-to-end tests run it small).

    .venv/bin/python -m benchmarks.sigkill_ingest --files 1000 --kills 10 --seed 1

Prints a JSON summary; exits 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from citewell.testing.crash_run import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    result = run(args.files, args.kills, args.seed)
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
