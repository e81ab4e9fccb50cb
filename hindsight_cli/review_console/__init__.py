"""The review console: a small Starlette app over the review queue (ReviewQueue, the same code as the CLI)."""
