"""The simulators: everything that imitates the outside world so chainloom can be tested,
benchmarked and demonstrated without it.

They live in the dev kit, outside the product's wheel: the product (the Wormhole core, the
event store, the ledger ETL and backends, the relayer) never depends on a fake, and an
import-linter contract forbids every product package from importing :mod:`chainloom_dev`.
The tests, the benchmarks and the demo scripts import it; users reach it through
``chainloom-dev`` (``vaa generate``, ``ledger generate``, ``ledger replay``, ``spy serve``)
and, by entry point (:mod:`chainloom.extensions`), through the product's ``--guardian-set
dev`` and the simulated chains of ``relayer work`` and ``relayer listen``.

* :mod:`~chainloom_dev.sim.dev_guardians` - deterministic test guardians that sign any VAA;
* :mod:`~chainloom_dev.sim.vaa_workload` - mainnet-shaped streams of signed VAAs;
* :mod:`~chainloom_dev.sim.spy_server` - a server speaking the guardian spy's gRPC API;
* :mod:`~chainloom_dev.sim.sim_chains` - simulated target chains behind the relayer's
  :class:`~chainloom.relayer.adapters.ChainAdapter` Protocol;
* :mod:`~chainloom_dev.sim.ledger_generator` - consecutive, consistent XRPL ledgers;
* :mod:`~chainloom_dev.sim.ledger_replay` - a ledger dump served over rippled's gRPC API.

Each fake raises the errors of the product package it stands in for (a simulated chain raises
the relayer's :class:`~chainloom.relayer.errors.SubmitError`), so code under test sees what
it would see in production; :mod:`~chainloom_dev.sim.errors` holds the harness's own.
This module imports nothing, so importing one fake does not load the others.
"""
