"""Errors of the events API, each answered with one HTTP status and a one-line reason::

    chainloom.eventstore.errors.EventStoreError
    └── ApiError                 base: an answer other than 200 (``status``, ``reason``)
        ├── BadParameterError    400, names the path or query parameter that is wrong
        ├── NotFoundError        404, says what was looked for
        └── MethodNotAllowedError  405, lists the methods the path takes

Outages are not here: :class:`~chainloom.eventstore.errors.StoreUnavailableError` from the
store becomes a 503 in :mod:`chainloom.eventstore.api.app`.
"""

from __future__ import annotations

from chainloom.eventstore.errors import EventStoreError


class ApiError(EventStoreError):
    """A request the API answers with an error status."""

    status = 500
    """The HTTP status of the answer."""
    word = "error"
    """The ``error`` word of the JSON answer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        """What was wrong, on one line."""


class BadParameterError(ApiError):
    """A path or query parameter is malformed or out of range."""

    status = 400
    word = "bad_request"

    def __init__(self, parameter: str, reason: str) -> None:
        super().__init__(f"{parameter}: {reason}")
        self.parameter = parameter
        """The parameter's name as the client wrote it (``pageSize``, ``emitter``)."""


class NotFoundError(ApiError):
    """Nothing stored (or no route) for what was asked."""

    status = 404
    word = "not_found"


class MethodNotAllowedError(ApiError):
    """The path exists but not with this method."""

    status = 405
    word = "method_not_allowed"

    def __init__(self, method: str, path: str, allowed: tuple[str, ...]) -> None:
        super().__init__(f"{method} is not allowed on {path} (allowed: {', '.join(allowed)})")
        self.allowed = allowed
        """The methods the path answers."""
