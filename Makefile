# The two commands of the README: `make demo` and `make test`. Both set everything up first (cached).
.PHONY: setup demo test test-weaviate-1.27 lint eval eval-corrections eval-poisoning bench bench-plugin package

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

# Correction detection, the poisoning screen and redaction on their hand-labelled sets (pure functions, seconds).
eval-corrections: setup
	.venv/bin/python -m bench.eval_corrections

eval-poisoning: setup
	.venv/bin/python -m bench.eval_poisoning

bench: setup
	.venv/bin/python -m bench.bench_store

bench-plugin: setup
	.venv/bin/python -m bench.bench_plugin

package: setup
	.venv/bin/python -m scripts.package_plugin
