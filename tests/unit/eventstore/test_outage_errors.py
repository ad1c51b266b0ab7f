"""Outage errors read as one line naming the endpoint and the last error the client saw."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.api_core import exceptions as gexc
from google.cloud.bigtable.data.exceptions import RetryExceptionGroup

from chainloom.eventstore.bigtable import describe_outage, endpoint
from chainloom.eventstore.errors import EventStoreError, StoreUnavailableError
from chainloom.eventstore.writer import WriterConfig
from chainloom.settings import BigtableSettings

# The client's exception classes, called through typed names (their __init__ is untyped).
unavailable: Callable[[str], Exception] = gexc.ServiceUnavailable
deadline_exceeded: Callable[[str], Exception] = gexc.DeadlineExceeded
retry_error: Callable[[str, Exception], Exception] = gexc.RetryError


def _deadline_after_attempts() -> Exception:
    """What the data client raises when every attempt failed: DeadlineExceeded from a group."""
    attempts = [
        unavailable("failed to connect to all addresses;\n Connection refused"),
        unavailable("failed to connect to all addresses; Connection reset"),
    ]
    try:
        try:
            raise RetryExceptionGroup(attempts)
        except RetryExceptionGroup as group:
            raise deadline_exceeded("operation_timeout of 3.0s exceeded") from group
    except gexc.DeadlineExceeded as error:
        return error
    raise AssertionError("unreachable")


def test_a_deadline_names_the_time_and_the_last_attempts_error_on_one_line() -> None:
    text = describe_outage(_deadline_after_attempts(), 3.0)
    assert text == (
        "no answer within 3 s (last error: 503 failed to connect to all addresses; "
        "Connection reset)"
    )


def test_the_classic_clients_retry_error_names_its_cause() -> None:
    error = retry_error("Timeout of 60.0s exceeded", unavailable("refused\n"))
    assert describe_outage(error, 2.5) == "no answer within 2.5 s (last error: 503 refused)"


def test_the_endpoint_is_the_emulator_or_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = BigtableSettings(project="p", instance="i")
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", "127.0.0.1:9")
    assert endpoint(settings) == "emulator 127.0.0.1:9"
    monkeypatch.delenv("BIGTABLE_EMULATOR_HOST")
    assert endpoint(settings) == "projects/p/instances/i"


def test_store_unavailable_is_an_event_store_error_with_one_line() -> None:
    error = StoreUnavailableError("emulator 127.0.0.1:9", "refused", pending_rows=3)
    assert isinstance(error, EventStoreError)
    assert str(error) == "Bigtable unavailable at emulator 127.0.0.1:9: refused"
    assert error.pending_rows == 3


@pytest.mark.parametrize("deadline", [0.0, -1.0])
def test_a_writer_deadline_must_be_positive(deadline: float) -> None:
    with pytest.raises(ValueError, match="deadline must be positive"):
        WriterConfig(deadline=deadline)
