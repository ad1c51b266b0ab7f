"""chainloom's dev kit: what develops and tests chainloom, never shipped in its wheel.

* :mod:`chainloom_dev.stack`: the local stack (Redis, Cassandra, the Bigtable emulator, the
  Kubernetes control plane and a real node, geth, the collector, the spark-operator), built
  from the package registries and cached;
* :mod:`chainloom_dev.sim`: simulators and generators (dev guardians, VAA and ledger
  workloads, the spy, public-RPC and ledger replay servers, simulated chains);
* :mod:`chainloom_dev.net`: small helpers the tests and benches share (free ports, waiting
  for a server);
* :mod:`chainloom_dev.cli`: the ``chainloom-dev`` command.

The product finds the dev kit's guardian sets and simulated chains through entry points
(:mod:`chainloom.extensions`), so it never imports this package.
"""
