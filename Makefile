# Plain targets over plain scripts: read scripts/ to see exactly what each one does.
.PHONY: setup test unit demo demo-cluster stack-up stack-down stack-status lint format generate generate-check bench clean

setup:          ## create .venv and install chainloom with its dev tools
	scripts/setup

test:           ## everything CI runs: lint, types, unit + integration + cluster tests
	scripts/test

unit:           ## the fast, server-free tests only
	scripts/test tests/unit

demo:           ## sample data through the pipelines on local defaults (Redis, Bigtable emulator, Cassandra, local Spark)
	scripts/demo

demo-cluster:   ## the chart on the local node (root) with one resource of each kind, then relaying on geth
	scripts/demo-cluster

stack-up:       ## start the local stack (add ARGS=--full for controller-manager, scheduler, KWOK)
	scripts/setup && .venv/bin/chainloom-dev stack up $(ARGS)

stack-status:
	.venv/bin/chainloom-dev stack status

stack-down:
	.venv/bin/chainloom-dev stack down

lint:
	scripts/setup && .venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy services operator spark-apps devkit bench tests && .venv/bin/lint-imports

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .

generate:       ## every code generator (gRPC modules, settings reference, CRDs, contract artifacts)
	scripts/generate

generate-check: ## fail if committed generated output is stale (scripts/test's lint runs it)
	scripts/generate --check

bench:          ## the benchmarks in bench/ (figures go into docs/performance.md)
	scripts/bench

clean:
	rm -rf .venv build *.egg-info .mypy_cache .ruff_cache .pytest_cache services/chainloom/rpc/generated
