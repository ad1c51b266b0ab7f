"""The development harness: everything that imitates the outside world so chainloom can be
tested, benchmarked and demonstrated without it.

Why a package of its own: the product (the Wormhole core, the event store, the ledger ETL and
backends, the relayer, the stack) must never depend on a fake. Keeping the fakes here makes
that visible and checkable: an import-linter contract in ``pyproject.toml`` forbids every
product package from importing :mod:`chainloom.testing`. The CLI, the tests, the benchmarks and
the demo scripts may import it; users reach it through the CLI to test their own pipelines
(``chainloom vaa generate``, ``ledger generate``, ``ledger replay``, ``spy serve``, the
simulated chains of ``relayer work`` and ``relayer listen``).

* :mod:`~chainloom.testing.dev_guardians` - deterministic test guardians that sign any VAA;
* :mod:`~chainloom.testing.vaa_workload` - mainnet-shaped streams of signed VAAs;
* :mod:`~chainloom.testing.spy_server` - a server speaking the guardian spy's gRPC API;
* :mod:`~chainloom.testing.sim_chains` - simulated target chains behind the relayer's
  :class:`~chainloom.relayer.adapters.ChainAdapter` Protocol;
* :mod:`~chainloom.testing.ledger_generator` - consecutive, consistent XRPL ledgers;
* :mod:`~chainloom.testing.ledger_replay` - a ledger dump served over rippled's gRPC API.

Each fake raises the errors of the product package it stands in for (a simulated chain raises
the relayer's :class:`~chainloom.relayer.errors.SubmitError`), so code under test sees what
it would see in production; :mod:`~chainloom.testing.errors` holds the harness's own.
This module imports nothing, so importing one fake does not load the others.
"""
