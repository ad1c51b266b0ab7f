"""The CLI's error boundary: each family of error gets its exit code and one line."""

from __future__ import annotations

import errno
from pathlib import Path

import grpc
import pytest
import redis
from click.testing import CliRunner

from chainloom.cli._main import main
from chainloom.cli.boundary import GivenValue, classify, report
from chainloom.cli.common import ExitCode
from chainloom.errors import ChainloomError, ConflictError, InputFileError, UnavailableError
from chainloom_dev.cli._main import main as dev_main


class PackageError(ChainloomError):
    """A package's base error."""


class RefusedError(PackageError):
    """A package's refusal of bad input."""


class OutageError(PackageError, UnavailableError):
    """A package's outage error, derived from the marker."""


class ClashError(PackageError, ConflictError):
    """A package's conflict error, derived from the marker."""


def test_chainloom_errors_by_marker():
    assert classify(RefusedError("bad value")).code == ExitCode.BAD_INPUT
    assert classify(RefusedError("bad value")).message == "error: bad value"
    assert classify(OutageError("store down")).code == ExitCode.UNAVAILABLE
    assert classify(ClashError("hash differs")).code == ExitCode.CONFLICT


def test_a_refusal_raised_while_handling_an_outage_is_an_outage():
    try:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        except ConnectionRefusedError:
            raise RefusedError("cannot open keyspace at 127.0.0.1:9042") from None
    except RefusedError as error:
        outcome = classify(error)
    assert outcome.code == ExitCode.UNAVAILABLE
    assert outcome.message == "error: cannot open keyspace at 127.0.0.1:9042"


def test_redis_outage_names_the_option_without_the_password():
    given = [GivenValue("--redis-url", "redis://user:hunter2@127.0.0.1:1/0")]
    outcome = classify(redis.ConnectionError("Error 111 connecting to 127.0.0.1:1."), given)
    assert outcome.code == ExitCode.UNAVAILABLE
    assert "--redis-url redis://user:***@127.0.0.1:1/0" in outcome.message
    assert "hunter2" not in outcome.message


def test_an_outage_names_the_server_of_the_environment_when_no_option_does():
    given = [GivenValue("--table", "events"), GivenValue("$BIGTABLE_EMULATOR_HOST", "h:1")]
    outcome = classify(TimeoutError("deadline exceeded"), given)
    assert outcome.message == (
        "error: unavailable ($BIGTABLE_EMULATOR_HOST h:1): TimeoutError: deadline exceeded"
    )
    given = [GivenValue("--redis-url", "redis://r:2/0"), *given]
    assert "$BIGTABLE" not in classify(TimeoutError("deadline exceeded"), given).message


def test_redis_refusing_credentials_is_configuration():
    outcome = classify(redis.AuthenticationError("invalid username-password pair"))
    assert outcome.code == ExitCode.BAD_INPUT


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (grpc.StatusCode.UNAVAILABLE, ExitCode.UNAVAILABLE),
        (grpc.StatusCode.DEADLINE_EXCEEDED, ExitCode.UNAVAILABLE),
        (grpc.StatusCode.INVALID_ARGUMENT, ExitCode.FINDING),
    ],
)
def test_grpc_status_codes(code: grpc.StatusCode, expected: ExitCode):
    error = grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "no route")
    assert classify(error).code == expected


def test_socket_errors_are_outages():
    assert classify(ConnectionRefusedError(111, "refused")).code == ExitCode.UNAVAILABLE
    assert classify(TimeoutError("timed out")).code == ExitCode.UNAVAILABLE


def test_binary_file_is_named_by_its_option(tmp_path: Path):
    binary = tmp_path / "config.yaml"
    binary.write_bytes(b"\x00\xd0\xff")
    text = tmp_path / "other.txt"
    text.write_text("fine")
    given = [GivenValue("--other", str(text)), GivenValue("--config", str(binary))]
    error = UnicodeDecodeError("utf-8", b"\x00\xd0\xff", 1, 2, "invalid continuation byte")
    outcome = classify(error, given)
    assert outcome.code == ExitCode.BAD_INPUT
    assert outcome.message == (
        f"error: --config {binary}: not UTF-8 text (byte 0xd0 at offset 1; a binary file?)"
    )


def test_missing_file_inside_a_directory_option(tmp_path: Path):
    missing = tmp_path / "xrpl_vectors.json"
    error = FileNotFoundError(errno.ENOENT, "No such file or directory", str(missing))
    outcome = classify(error, [GivenValue("--vectors", str(tmp_path))])
    assert outcome.code == ExitCode.BAD_INPUT
    assert outcome.message == f"error: --vectors {tmp_path} ({missing}): does not exist"


def test_directory_where_a_file_was_expected(tmp_path: Path):
    error = IsADirectoryError(errno.EISDIR, "Is a directory", str(tmp_path))
    outcome = classify(error, [GivenValue("DUMP", str(tmp_path))])
    assert outcome.message == f"error: DUMP {tmp_path}: is a directory, not a file"


def test_interrupt_and_groups():
    assert classify(KeyboardInterrupt()).code == ExitCode.INTERRUPTED
    group = ExceptionGroup("tasks", [OutageError("redis down"), ValueError("later")])
    assert classify(group).code == ExitCode.UNAVAILABLE


def test_anything_else_is_an_internal_error_in_one_line():
    outcome = classify(ValueError("unexpected\nsecond line"))
    assert outcome.code == ExitCode.FINDING
    assert outcome.message == (
        "internal error: ValueError: unexpected second line "
        "(set CHAINLOOM_DEBUG=1 for the traceback)"
    )


def test_report_prints_the_traceback_only_when_debugging(monkeypatch, capsys):
    def failing() -> None:
        raise ValueError("boom")

    for debug, traceback_shown in (("0", False), ("1", True)):
        monkeypatch.setenv("CHAINLOOM_DEBUG", debug)
        with pytest.raises(ValueError, match="boom") as raised:
            failing()
        assert report(raised.value) == ExitCode.FINDING
        err = capsys.readouterr().err
        assert ("Traceback" in err) is traceback_shown
        assert err.rstrip().splitlines()[-1].startswith("internal error: ValueError: boom")


def test_input_file_error_names_option_and_path():
    error = InputFileError("x.bin", "not UTF-8 text", option="--config")
    assert str(error) == "--config x.bin: not UTF-8 text"
    assert classify(error).code == ExitCode.BAD_INPUT


def test_root_group_runs_commands_under_the_boundary(tmp_path: Path):
    """Through click (the lazy group both ``chainloom`` and ``chainloom-dev`` use): a binary
    vectors file is one line and exit 2, no traceback."""
    binary = tmp_path / "vectors.json"
    binary.write_bytes(bytes(range(256)))
    result = CliRunner().invoke(
        dev_main, ["ledger", "generate", "--vectors", str(binary), "--out", str(tmp_path / "d")]
    )
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.strip().splitlines() == [
        f"error: --vectors {binary}: not UTF-8 text (byte 0x80 at offset 128; a binary file?)"
    ]


def test_usage_errors_keep_clicks_exit_code():
    result = CliRunner().invoke(main, ["vaa", "decode", "--no-such-option"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "No such option" in result.output
