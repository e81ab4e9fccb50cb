# The two commands of the README: `make demo` and `make test`. Both set everything up first (cached).
.PHONY: setup demo test lint eval bench bench-plugin package

setup:
	@scripts/bootstrap.sh

demo: setup
	.venv/bin/python -m hindsight_insights demo

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

test: lint
	.venv/bin/python -m pytest

eval: setup
	.venv/bin/python bench/eval_retrieval.py

bench: setup
	.venv/bin/python bench/bench_store.py

bench-plugin: setup
	.venv/bin/python bench/bench_plugin.py

package: setup
	.venv/bin/python scripts/package_plugin.py
