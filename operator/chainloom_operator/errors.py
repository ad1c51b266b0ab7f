"""The operator's errors, in one tree.

A reconcile that fails tells the user what to do: the message of each error is written into a
Kubernetes event and the resource's ``Degraded`` condition, so it names the missing thing and
how to provide it, never a secret's value::

    ChainloomError
    └── OperatorError                    anything the operator refuses or cannot do
        ├── SpecError                    a custom resource's spec fails the settings models
        ├── MissingSecretError           a referenced Secret (or its key) does not exist
        ├── MissingCrdError              a kind the operator renders is not installed
        ├── MissingSinkError             an IngestPipeline's BackendTable does not exist
        ├── BackendUnavailableError      Bigtable or Cassandra could not be reached
        │                                (also a chainloom.errors.UnavailableError)
        └── ApiUnavailableError          the Kubernetes API server could not be reached
                                         (also a chainloom.errors.UnavailableError)
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class OperatorError(ChainloomError):
    """Base of every error the operator raises deliberately."""

    reason: str = "ReconcileFailed"
    """The ``reason`` of the Kubernetes event and condition this error becomes (CamelCase)."""


class SpecError(OperatorError):
    """A custom resource's spec is refused by the settings models (the message names the field)."""

    reason = "InvalidSpec"


class MissingSecretError(OperatorError):
    """A Secret the spec references (a wallet key, a Redis URL) does not exist in the namespace."""

    reason = "MissingSecret"

    def __init__(self, namespace: str, name: str, purpose: str) -> None:
        super().__init__(
            f"Secret {namespace}/{name} ({purpose}) does not exist: create it, e.g. "
            f"kubectl -n {namespace} create secret generic {name} --from-file=key=<file>"
        )
        self.namespace = namespace
        """Namespace of the missing Secret."""
        self.name = name
        """Name of the missing Secret."""


class MissingCrdError(OperatorError):
    """The API server does not serve a kind the operator renders (a CRD is not installed)."""

    reason = "MissingCRD"

    def __init__(self, kind: str, api_version: str, install: str) -> None:
        super().__init__(f"the {kind} kind ({api_version}) is not installed: {install}")
        self.kind = kind
        """The kind the server does not know."""


class MissingSinkError(OperatorError):
    """The BackendTable an IngestPipeline writes to does not exist in its namespace."""

    reason = "MissingSink"

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(
            f"BackendTable {namespace}/{name} (the sink) does not exist: create it first "
            "(see docs/samples/backendtable-bigtable.yaml)"
        )


class BackendUnavailableError(OperatorError, UnavailableError):
    """Bigtable or Cassandra could not be reached; the reconcile is retried with backoff."""

    reason = "BackendUnavailable"


class ApiUnavailableError(OperatorError, UnavailableError):
    """The Kubernetes API server could not be reached, after kopf's own retries (about a
    minute): ``operator run`` ends with this one line and exit code 4."""

    reason = "ApiUnavailable"
