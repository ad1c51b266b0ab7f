"""The streaming indexer: a guardian spy's VAAs into the event store, as they are signed.

Layers, from pure to wired:

* :mod:`~chainloom.indexer.dedupe` - the bounded recent-digest set that drops the ~19 guardian
  copies of a VAA before any work is done on them;
* :mod:`~chainloom.indexer.metrics` - counters, and the OpenTelemetry instruments reading them;
* :mod:`~chainloom.indexer.pipeline` - the running pipeline (spy client -> dedupe -> verify ->
  bounded buffer -> batched writes), written against small Protocols;
* :mod:`~chainloom.indexer.probes` - ``/healthz``, ``/readyz`` and ``/metrics`` over HTTP;
* :mod:`~chainloom.indexer.gapfill` - gap detection and recovery: a
  :class:`~chainloom.wormhole.sequences.GapBook` observes every write, overdue holes are fetched
  from the public API and fed back through the pipeline, the state kept in ``gaps:`` rows;
* :mod:`~chainloom.indexer.service` - builds all of it from
  :class:`~chainloom.indexer.config.IndexerSettings` and runs it until SIGTERM.
"""
