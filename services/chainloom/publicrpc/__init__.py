"""A client of the guardians' public API: fetch one signed VAA by message id, from the first
endpoint that has it.

Gap backfill (the Spark ``gap-backfill`` job, and the indexer's and the relayer's missed-VAA
recovery) fetches what the store lacks through :class:`PublicRpcClient`. The harness's server
(:mod:`chainloom_dev.sim.publicrpc_server`) speaks the same method, so a real guardian
endpoint is a drop-in.
"""

from __future__ import annotations

from chainloom.publicrpc.client import (
    Endpoint,
    FetchResult,
    FetchStatus,
    GrpcTransport,
    PublicRpcClient,
    Transport,
)
from chainloom.publicrpc.errors import (
    CallFailedError,
    EndpointConfigError,
    PublicRpcError,
    PublicRpcUnavailableError,
)

__all__ = [
    "CallFailedError",
    "Endpoint",
    "EndpointConfigError",
    "FetchResult",
    "FetchStatus",
    "GrpcTransport",
    "PublicRpcClient",
    "PublicRpcError",
    "PublicRpcUnavailableError",
    "Transport",
]
