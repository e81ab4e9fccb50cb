"""`python -m hindsight_insights COMMAND`."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.quiet import quiet_dependency_warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hindsight_insights")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="start Weaviate, save and search insights in zh and en, print the rules")
    commands.add_parser("ensure-weaviate", help="build or find the local weaviate-server binary and print its path")
    args = parser.parse_args(argv)
    quiet_dependency_warnings()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per HTTP request otherwise
    try:
        if args.command == "demo":
            from hindsight_insights.demo import run

            settings = Settings()
            run(settings if "HINDSIGHT_PROJECT" in os.environ else settings.model_copy(update={"project": "demo"}))
        elif args.command == "ensure-weaviate":
            from hindsight_insights.weaviate_server import ensure_binary

            print(ensure_binary(Settings()))
    except HindsightError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
