"""Errors of the public-API client.

A message that no endpoint has, or that every endpoint failed to answer for, is not an
exception: :meth:`~chainloom.publicrpc.client.PublicRpcClient.fetch` returns it as a
:class:`~chainloom.publicrpc.client.FetchResult` with the reason, so a bulk backfill reports
it and goes on. Exceptions are for what stops the caller::

    PublicRpcError                        (a ChainloomError)
    ├── EndpointConfigError        an endpoint that is not host:port or https://host  exit 2
    ├── PublicRpcUnavailableError  no endpoint reachable (UnavailableError)            exit 4
    └── CallFailedError            one call failed (raised by a transport, caught by the client)
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class PublicRpcError(ChainloomError):
    """Base class of the public-API client's errors."""


class EndpointConfigError(PublicRpcError):
    """An endpoint's text cannot be used (exit 2)."""


class PublicRpcUnavailableError(PublicRpcError, UnavailableError):
    """None of the endpoints can be reached (exit 4)."""


class CallFailedError(PublicRpcError):
    """One GetSignedVAA call failed with a gRPC status other than NOT_FOUND, or timed out."""

    def __init__(self, endpoint: str, code: str, detail: str, *, retryable: bool) -> None:
        super().__init__(f"{endpoint}: {code}: {detail}" if detail else f"{endpoint}: {code}")
        self.endpoint = endpoint
        """The endpoint that failed."""
        self.code = code
        """The gRPC status name (``UNAVAILABLE``, ``DEADLINE_EXCEEDED``, ...)."""
        self.detail = detail
        """The server's or the library's detail text, one line."""
        self.retryable = retryable
        """Whether asking the same endpoint again may succeed (an outage, a timeout)."""
