# The two commands of the README: `make demo` and `make test`. Both set everything up first (cached); CI runs
# `make test` (.ci/run).
.PHONY: setup setup-tests demo test test-weaviate-1.27 test-cluster lint eval eval-corrections eval-poisoning eval-reflection \
	bench bench-plugin bench-frozen bench-search bench-worker package pin-chatflow worker train-screen bench-screen \
	train-detector train-address-spans bench-detector bench-screen-writes bench-blame bench-fewshot bench-record-turn bench-scale

# uv, the venv and the Weaviate binary: what `make demo` needs.
setup:
	@scripts/bootstrap.sh

# The same, plus the Debian packages of the servers the tests start (PostgreSQL, Redis): apt-get when missing.
setup-tests:
	@scripts/bootstrap.sh --tests

demo: setup
	.venv/bin/python -m hindsight_cli demo

# The reflection worker on the configured project (HINDSIGHT_* settings; README, "The reflection worker").
worker: setup
	.venv/bin/python -m hindsight_cli worker

define lint_commands
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
endef

lint: setup
	$(lint_commands)

# Lint, the whole suite on Weaviate 1.39, then again on 1.27, the oldest version supported (Dify's docker-compose
# ships it). The daemon tests and the runtime tests (Dify's CLI, the browser) test the runtimes' wiring over a store
# that the rest tests on both versions: they run once.
# The cluster tests (three Weaviate nodes, one killed) run once too, on the default Weaviate: `make test-cluster`.
test: setup-tests
	$(lint_commands)
	.venv/bin/python -m pytest -m "not cluster"
	HINDSIGHT_WEAVIATE_VERSION=1.27.0 .venv/bin/python -m pytest -m "not daemon and not runtime and not cluster"
	$(cluster_tests)

# Only the second half of `make test`.
test-weaviate-1.27: setup-tests
	HINDSIGHT_WEAVIATE_VERSION=1.27.0 .venv/bin/python -m pytest -m "not daemon and not runtime and not cluster"

define cluster_tests
.venv/bin/python -m pytest -m cluster
endef

# A 3-node Weaviate cluster on 127.0.0.1 with replication factor 3: a node killed under load, two workers on
# PostgreSQL with one killed (tests/test_cluster.py; HINDSIGHT_WEAVIATE_VERSION=1.27.0 for the oldest server).
test-cluster: setup-tests
	$(cluster_tests)

eval: setup
	.venv/bin/python -m bench.eval_retrieval

# Correction detection, the poisoning screen and redaction on their hand-labelled sets (pure functions, seconds).
eval-corrections: setup
	.venv/bin/python -m bench.eval_corrections

# The learned poisoning screen from training/screening/corpus.jsonl (deterministic; writes
# hindsight_insights/data/screen_model.npz, which the plugin ships).
train-screen: setup
	.venv/bin/python -m scripts.train_screen

# The learned correction detector from training/corrections/corpus.jsonl (deterministic; writes
# hindsight_insights/data/detector_model.npz, which the plugin ships).
train-detector: setup
	.venv/bin/python -m scripts.train_detector

# The learned address finder of redaction from the secrets of the retired screening sets and the two corpora
# (deterministic; writes hindsight_insights/data/address_spans.npz, which the plugin ships).
train-address-spans: setup
	.venv/bin/python -m scripts.train_address_spans

# Its cost per turn beside the rules alone, in one run.
bench-detector: setup
	.venv/bin/python -m bench.bench_detector

eval-reflection: setup
	.venv/bin/python -m bench.eval_reflection

eval-poisoning: setup
	.venv/bin/python -m bench.eval_poisoning

bench: setup
	.venv/bin/python -m bench.bench_store

# The poisoning screen's cost on every write: rules alone beside rules + the learned screen, and redaction.
bench-screen: setup
	.venv/bin/python -m bench.bench_screen

# save_insight and record_turn with rules + the learned screen beside the rules alone, one run (p95 as ratios).
bench-screen-writes: setup
	.venv/bin/python -m bench.bench_screen_writes

bench-blame: setup
	.venv/bin/python -m bench.bench_blame

# record_turn at 100,000 insights through the plugin runtime: the learned detector beside the rules alone, one run,
# interleaved. The 100,000 are imported once into ~/.cache/hindsight-insights/bench/ and reused.
bench-record-turn: setup
	.venv/bin/python -m bench.bench_record_turn

bench-plugin: setup
	.venv/bin/python -m bench.bench_plugin

bench-frozen: setup
	.venv/bin/python -m bench.bench_frozen

# The worker with the offline extractor: reflections per minute and its peak RSS (target 300 MB).
bench-fewshot: setup
	.venv/bin/python -m bench.bench_fewshot
	.venv/bin/python -m bench.bench_fewshot --language en

bench-worker: setup
	.venv/bin/python -m bench.bench_worker

# search_insight at 100,000 insights: plugin runtime, in-process, one direct hybrid query (about 30 minutes).
bench-search: setup
	.venv/bin/python -m bench.bench_search

# A million insights: one project of 1,000,000 (beside 100,000), 1,000 projects of 1,000, 10,000 projects of 100;
# import rate, search_insight p95 beside a raw hybrid query, RSS with and without RQ compression, recall@10. Imports are
# cached in ~/.cache/hindsight-insights/bench/ (hours on a small machine the first time: see docs/scale.md).
bench-scale: setup
	.venv/bin/python -m bench.bench_scale

# With Dify's CLI when one is found (HINDSIGHT_DIFY_CLI, PATH, ../shared/tools), else our own packager.
package: setup
	.venv/bin/python -m scripts.package_plugin

# Point examples/hindsight_chatflow.yml's plugin dependency at the package this commit builds.
pin-chatflow: setup
	.venv/bin/python -m scripts.package_plugin --pin-chatflow
