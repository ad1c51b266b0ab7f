"""The kopf handlers: they orchestrate, nothing else. One module per resource kind, as
spark-operator has one controller folder per kind:

* :mod:`.relayer_pool`, :mod:`.ingest_pipeline`, :mod:`.backend_table`: each kind's reconcile,
  status refresh, and the watches on its children;
* :mod:`.shared`: what they share (bookkeeping, apply and prune, retry, child events);
* :mod:`.startup`: kopf's settings, logins, the probe and the recheck thread.

Importing this package registers every handler with kopf.
"""

from chainloom_operator._handlers import (
    backend_table,
    ingest_pipeline,
    relayer_pool,
    shared,
    startup,
)
from chainloom_operator._handlers.shared import FINALIZER

__all__ = ["FINALIZER", "backend_table", "ingest_pipeline", "relayer_pool", "shared", "startup"]
