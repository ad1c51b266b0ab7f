"""Errors of the ledger API: rippled's error objects, each with rippled's HTTP status.

rippled answers a failed method with ``result: {error, error_code, error_message, status:
"error", request}``; the token, the number and the default message come from rippled's
``ErrorCodes.cpp``, which also gives each error an HTTP status. A request that is not JSON-RPC at
all (unparseable, no method, params not a one-element list) never gets that far: rippled answers
it with a plain-text 400, and so do we (:class:`MalformedRequestError`)::

    chainloom.ledger.errors.LedgerError
    └── ApiError
        ├── RpcError           a method refused the request: a rippled error object
        └── MalformedRequestError   the HTTP body is not a JSON-RPC request (400, plain text)
"""

from __future__ import annotations

from dataclasses import dataclass

from chainloom.ledger.errors import LedgerError


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One rippled error: token, number, default message and HTTP status."""

    token: str
    """The ``error`` string (``lgrNotFound``)."""
    code: int
    """The ``error_code`` number."""
    message: str
    """The default ``error_message``."""
    http_status: int
    """The HTTP status rippled gives the error."""


ERRORS: dict[str, ErrorInfo] = {
    info.token: info
    for info in (
        ErrorInfo("actMalformed", 35, "Account malformed.", 200),
        ErrorInfo("actNotFound", 19, "Account not found.", 200),
        ErrorInfo("entryNotFound", 98, "Entry not found.", 400),
        ErrorInfo("badFeature", 40, "Feature unknown or invalid.", 400),
        ErrorInfo("badIssuer", 41, "Issuer account malformed.", 400),
        ErrorInfo("badMarket", 42, "No such market.", 404),
        ErrorInfo("dstActMalformed", 48, "Destination account is malformed.", 400),
        ErrorInfo("dstActNotFound", 50, "Destination account not found.", 404),
        ErrorInfo("dstAmtMalformed", 51, "Destination amount/currency/issuer is malformed.", 400),
        ErrorInfo("dstIsrMalformed", 53, "Destination issuer is malformed.", 400),
        ErrorInfo("internal", 73, "Internal error.", 500),
        ErrorInfo("invalidHotWallet", 30, "Invalid hotwallet.", 400),
        ErrorInfo("srcActMalformed", 65, "Source account is malformed.", 400),
        ErrorInfo("srcActNotFound", 67, "Source account not found.", 404),
        ErrorInfo("srcCurMalformed", 69, "Source currency is malformed.", 400),
        ErrorInfo("srcIsrMalformed", 70, "Source issuer is malformed.", 400),
        ErrorInfo("invalidParams", 31, "Invalid parameters.", 400),
        ErrorInfo("lgrIdxMalformed", 58, "Ledger index malformed.", 400),
        ErrorInfo("lgrIdxsInvalid", 57, "Ledger indexes invalid.", 400),
        ErrorInfo("lgrNotFound", 21, "ledgerNotFound", 404),
        ErrorInfo("malformedStream", 71, "Stream malformed.", 400),
        ErrorInfo("notEnabled", 12, "Not enabled in configuration.", 501),
        ErrorInfo("noPermission", 6, "You don't have permission for this command.", 401),
        ErrorInfo("notSupported", 75, "Operation not supported.", 501),
        ErrorInfo("oracleMalformed", 94, "Oracle request is malformed.", 400),
        ErrorInfo("objectNotFound", 92, "The requested object was not found.", 404),
        ErrorInfo("slowDown", 10, "You are placing too much load on the server.", 503),
        ErrorInfo("tooBusy", 9, "The server is too busy to help you now.", 503),
        ErrorInfo("txnNotFound", 29, "Transaction not found.", 404),
        ErrorInfo("unknownCmd", 32, "Unknown method.", 405),
        # Clio's own errors when forwarding to rippled fails (``rpc/Errors.cpp``), worst last.
        ErrorInfo("connectionError", 7000, "Couldn't connect to rippled.", 503),
        ErrorInfo("requestError", 7001, "Error sending request to rippled.", 502),
        ErrorInfo("timeout", 7002, "Request to rippled timed out.", 504),
        ErrorInfo("invalidResponse", 7003, "Rippled returned an invalid response.", 502),
    )
}
"""The errors the API gives, by token (rippled's numbers and statuses; Clio's for forwarding,
whose statuses are ours: Clio answers them 200)."""


class ApiError(LedgerError):
    """Base class of the ledger API's errors."""


class RpcError(ApiError):
    """A method refused the request; becomes rippled's error object."""

    def __init__(
        self, token: str, message: str | None = None, *, extra: dict[str, object] | None = None
    ) -> None:
        self.info = ERRORS[token]
        self.token = token
        self.error_message = message or self.info.message
        self.extra = dict(extra or {})
        """More fields of the error object (``searched_all`` of ``txnNotFound``)."""
        super().__init__(f"{token}: {self.error_message}")

    @property
    def http_status(self) -> int:
        """rippled's HTTP status for this error."""
        return self.info.http_status


class MalformedRequestError(ApiError):
    """The HTTP body is not a JSON-RPC request; answered 400 with the message as plain text."""

    def __init__(self, message: str, *, http_status: int = 400) -> None:
        super().__init__(message)
        self.http_status = http_status


def invalid_params(message: str) -> RpcError:
    """``invalidParams`` naming what is wrong."""
    return RpcError("invalidParams", message)
