"""The one error boundary every ``chainloom`` command runs under.

A user should never see a traceback: whatever escapes a command becomes one line on stderr
and an exit code from the project's table (docs/exit-codes.md). Commands still raise precise
errors where they read their input, so the message names the option and the file; this module
is the safety net for everything they did not foresee, sorted by family:

* chainloom's own errors (:class:`chainloom.errors.ChainloomError`): outages (the
  :class:`~chainloom.errors.UnavailableError` marker, or an error raised while handling a
  client library's outage) exit 4, conflicts (:class:`~chainloom.errors.ConflictError`) 3,
  every other refusal 2;
* a client library that cannot reach its server (Redis, gRPC, Bigtable, Cassandra, a refused
  or timed-out socket) exits 4;
* a file that is missing, unreadable, a directory or not text exits 2, naming the path and,
  when the running command has it as a parameter, the option that named it;
* an interrupt exits 130;
* anything else is a bug: exit 1 with one line, and the traceback only with
  ``CHAINLOOM_DEBUG=1``.

:func:`classify` is pure (an exception and the command's parameter values in, an
:class:`Outcome` out) so the mapping is tested without starting processes.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from chainloom.cli.common import (
    ExitCode,
    describe_decode_error,
    describe_os_error,
)
from chainloom.errors import ChainloomError, ConflictError, UnavailableError
from chainloom.urls import redact_url

DEBUG_ENV = "CHAINLOOM_DEBUG"
"""Set to ``1`` to print the traceback of an unexpected error (the exit code is unchanged)."""

MAX_CAUSE_CHARS = 300
"""How much of a library's error message a line quotes before cutting it with ``...``."""

ENDPOINT_ENV = ("BIGTABLE_EMULATOR_HOST",)
"""Environment variables naming a server that no command has an option for."""

_ENDPOINT_WORDS = ("url", "address", "host", "grpc", "spy", "endpoint")


@dataclass(frozen=True)
class GivenValue:
    """One value a parameter of the running command had (from the command line, env or default)."""

    label: str
    """How the user names the parameter: ``--config``, ``DUMP``, or ``$VAR`` for environment."""
    value: str
    """The value as text."""


@dataclass(frozen=True)
class Outcome:
    """What the boundary prints and how the process exits."""

    code: ExitCode
    """The exit code."""
    message: str
    """The line for stderr (``error: ...`` or ``internal error: ...``)."""


def classify(error: BaseException, given: Sequence[GivenValue] = ()) -> Outcome:
    """The exit code and the one line for ``error``, raised by a command that had ``given``."""
    if isinstance(error, BaseExceptionGroup):
        return classify(error.exceptions[0], given)
    for family in FAMILIES:
        if family.matches(error):
            return Outcome(family.code, family.describe(error, given))
    return Outcome(
        ExitCode.FINDING,
        f"internal error: {type(error).__name__}: {_one_line(error)} "
        f"(set {DEBUG_ENV}=1 for the traceback)",
    )


@dataclass(frozen=True)
class Family:
    """A family of errors that ends a command the same way."""

    matches: Callable[[BaseException], bool]
    """Whether an error belongs to the family."""
    code: ExitCode
    """The exit code of the family."""
    describe: Callable[[BaseException, Sequence[GivenValue]], str]
    """The one line for an error of the family."""


def _interrupted(error: BaseException, given: Sequence[GivenValue]) -> str:
    del error, given
    return "interrupted"


def _plain(error: BaseException, given: Sequence[GivenValue]) -> str:
    del given
    return f"error: {error}"


def _is_chainloom_outage(error: BaseException) -> bool:
    if not isinstance(error, ChainloomError) or isinstance(error, ConflictError):
        return False
    return isinstance(error, UnavailableError) or any(_is_outage(c) for c in _causes(error))


def _is_sqlite_error(error: BaseException) -> bool:
    sqlite = sys.modules.get("sqlite3")
    return sqlite is not None and isinstance(error, sqlite.DatabaseError)


def _sqlite_line(error: BaseException, given: Sequence[GivenValue]) -> str:
    where = _labelled(given, lambda item: "sqlite" in item.label.lower())
    prefix = f"{where[0].label} {where[0].value}: " if where else ""
    return f"error: {prefix}SQLite: {_one_line(error)}"


def _refused_login_line(error: BaseException, given: Sequence[GivenValue]) -> str:
    del given
    return f"error: credentials refused: {_one_line(error)}"


def _decode_error_line(error: BaseException, given: Sequence[GivenValue]) -> str:
    assert isinstance(error, UnicodeDecodeError)
    return _decode_line(error, given)


def _path_error_line(error: BaseException, given: Sequence[GivenValue]) -> str:
    assert isinstance(error, OSError)
    return _os_error_line(error, given)


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The errors ``error`` was raised from or while handling (``raise ... from`` included)."""
    seen = {id(error)}
    cause = error.__cause__ or error.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _is_refused_login(error: BaseException) -> bool:
    """A server that answered but refused the credentials: configuration, not an outage."""
    redis = sys.modules.get("redis.exceptions")
    return redis is not None and isinstance(
        error, redis.AuthenticationError | redis.AuthorizationError
    )


def _is_outage(error: BaseException) -> bool:
    """Whether ``error`` is a client library (or the OS) failing to reach a server.

    Libraries are looked up in :data:`sys.modules` only: an error of a library that was
    never imported cannot have been raised, and the boundary stays cheap to load.
    """
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    redis = sys.modules.get("redis.exceptions")
    if redis is not None and isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return True
    grpc = sys.modules.get("grpc")
    if grpc is not None and isinstance(error, grpc.RpcError):
        code = error.code() if isinstance(error, grpc.Call) else None
        aio = sys.modules.get("grpc.aio")
        if code is None and aio is not None and isinstance(error, aio.AioRpcError):
            code = error.code()
        return code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    google = sys.modules.get("google.api_core.exceptions")
    if google is not None and isinstance(
        error, google.ServiceUnavailable | google.DeadlineExceeded | google.RetryError
    ):
        return True
    cassandra = sys.modules.get("cassandra")
    if cassandra is not None and isinstance(
        error,
        cassandra.OperationTimedOut
        | cassandra.Unavailable
        | cassandra.ReadTimeout
        | cassandra.WriteTimeout,
    ):
        return True
    cluster = sys.modules.get("cassandra.cluster")
    return cluster is not None and isinstance(error, cluster.NoHostAvailable)


def _outage_line(error: BaseException, given: Sequence[GivenValue]) -> str:
    cause = _one_line(error)
    endpoints = _labelled(
        given, lambda item: any(word in item.label.lower() for word in _ENDPOINT_WORDS)
    )
    named = [item for item in endpoints if _endpoint_text(item.value) in cause]
    options = [item for item in endpoints if not item.label.startswith("$")]
    shown = named or options or endpoints
    where = ", ".join(f"{item.label} {redact_url(item.value)}" for item in shown)
    return f"error: unavailable{f' ({where})' if where else ''}: {type(error).__name__}: {cause}"


def _endpoint_text(value: str) -> str:
    """The ``host:port`` part of an endpoint value, as libraries quote it in their messages."""
    from urllib.parse import urlsplit

    if "://" not in value:
        return value
    try:
        parts = urlsplit(value)
        return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname or value
    except ValueError:
        return value


def _decode_line(error: UnicodeDecodeError, given: Sequence[GivenValue]) -> str:
    problem = describe_decode_error(error)
    for item in given:
        if _is_file(item.value) and not _is_utf8_file(item.value):
            return f"error: {item.label} {item.value}: {problem}"
    return f"error: an input (a file or stdin) is {problem}"


def _os_error_line(error: OSError, given: Sequence[GivenValue]) -> str:
    problem = describe_os_error(error)
    if error.filename is None:
        return f"error: {problem}"
    path = os.fsdecode(error.filename) if not isinstance(error.filename, int) else ""
    for item in given:
        if _same_or_inside(path, item.value):
            shown = path if path == item.value else f"{item.value} ({path})"
            return f"error: {item.label} {shown}: {problem}"
    return f"error: {path}: {problem}"


def _same_or_inside(path: str, value: str) -> bool:
    if not path or not value:
        return False
    if path == value:
        return True
    try:
        resolved, candidate = Path(path).absolute(), Path(value).absolute()
    except (OSError, ValueError):
        return False
    return resolved == candidate or candidate in resolved.parents


def _is_file(value: str) -> bool:
    try:
        return bool(value) and len(value) < 4096 and os.path.isfile(value)
    except (OSError, ValueError):
        return False


def _is_utf8_file(path: str, limit: int = 64 << 20) -> bool:
    """Whether the first ``limit`` bytes of ``path`` decode as UTF-8 (unreadable: False)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as handle:
            read = 0
            while read < limit and (chunk := handle.read(1 << 20)):
                decoder.decode(chunk)
                read += len(chunk)
    except (OSError, UnicodeDecodeError):
        return False
    return True


def _labelled(
    given: Sequence[GivenValue], wanted: Callable[[GivenValue], bool]
) -> list[GivenValue]:
    return [item for item in given if item.value and wanted(item)]


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= MAX_CAUSE_CHARS else text[: MAX_CAUSE_CHARS - 3] + "..."


FAMILIES: tuple[Family, ...] = (
    Family(lambda e: isinstance(e, KeyboardInterrupt), ExitCode.INTERRUPTED, _interrupted),
    Family(lambda e: isinstance(e, ConflictError), ExitCode.CONFLICT, _plain),
    Family(_is_chainloom_outage, ExitCode.UNAVAILABLE, _plain),
    Family(lambda e: isinstance(e, ChainloomError), ExitCode.BAD_INPUT, _plain),
    Family(_is_refused_login, ExitCode.BAD_INPUT, _refused_login_line),
    Family(_is_outage, ExitCode.UNAVAILABLE, _outage_line),
    Family(lambda e: isinstance(e, UnicodeDecodeError), ExitCode.BAD_INPUT, _decode_error_line),
    Family(lambda e: isinstance(e, OSError), ExitCode.BAD_INPUT, _path_error_line),
    Family(_is_sqlite_error, ExitCode.BAD_INPUT, _sqlite_line),
)
"""The families, first match wins: chainloom's own errors (outage and conflict markers first),
then client libraries' outages, then files and SQLite. Anything else is an internal error."""


# ------------------------------------------------------------------------------- the context


def given_values(error: BaseException) -> list[GivenValue]:
    """The parameter values of the command that raised ``error``, innermost command first.

    The innermost :class:`click.Context` is found among the locals of the frames the error
    passed through (click keeps the running command's context there); each context up to the
    root contributes its parameters. Environment variables of chainloom that name existing
    files come last, for files a command reads without a parameter of its own, then the
    servers named only by environment (:data:`ENDPOINT_ENV`).
    """
    found: list[GivenValue] = []
    for context in _context_chain(_innermost_context(error)):
        for parameter in context.command.params:
            value = context.params.get(parameter.name or "")
            for text in _texts(value):
                found.append(GivenValue(_label(parameter), text))
    for name, value in sorted(os.environ.items()):
        if name.startswith("CHAINLOOM_") and _is_file(value):
            found.append(GivenValue(f"${name}", value))
    for name in ENDPOINT_ENV:
        if os.environ.get(name):
            found.append(GivenValue(f"${name}", os.environ[name]))
    return found


def _innermost_context(error: BaseException) -> click.Context | None:
    deepest: click.Context | None = None
    depth = -1
    for frame, _ in traceback.walk_tb(error.__traceback__):
        for value in frame.f_locals.values():
            if isinstance(value, click.Context):
                level = len(list(_context_chain(value)))
                if level > depth:
                    deepest, depth = value, level
    return deepest


def _context_chain(context: click.Context | None) -> Iterator[click.Context]:
    while context is not None:
        yield context
        context = context.parent


def _label(parameter: click.Parameter) -> str:
    if isinstance(parameter, click.Option):
        return max(parameter.opts, key=len)
    return parameter.human_readable_name


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Path):
        yield str(value)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _texts(item)


# ------------------------------------------------------------------------------- the boundary


def report(error: BaseException) -> ExitCode:
    """Print ``error`` as one line on stderr (and its traceback when debugging); its exit code."""
    outcome = classify(error, given_values(error))
    if os.environ.get(DEBUG_ENV) == "1":
        traceback.print_exception(error, file=sys.stderr)
    click.echo(outcome.message, err=True)
    return outcome.code
