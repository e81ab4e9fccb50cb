# The two commands of the README: `make demo` and `make test`. Both set everything up first (cached).
.PHONY: setup demo test test-weaviate-1.27 lint eval bench bench-plugin bench-search package

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

# The same suite against Weaviate 1.27, the oldest version supported (Dify's docker-compose ships it).
test-weaviate-1.27: setup
	HINDSIGHT_WEAVIATE_VERSION=1.27.0 .venv/bin/python -m pytest

eval: setup
	.venv/bin/python -m bench.eval_retrieval

bench: setup
	.venv/bin/python -m bench.bench_store

bench-plugin: setup
	.venv/bin/python -m bench.bench_plugin

# search_insight at 100,000 insights: plugin runtime, in-process, one direct hybrid query (about 30 minutes).
bench-search: setup
	.venv/bin/python -m bench.bench_search

package: setup
	.venv/bin/python -m scripts.package_plugin
