"""Helpers shared by the CLI's command groups (public within ``chainloom.cli``, not beyond).

Light on purpose: the wormhole library is imported inside the functions that need it, so a
group importing this module at load time stays cheap to register.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from chainloom.errors import InputFileError

if TYPE_CHECKING:
    from chainloom.wormhole import GuardianSets


class ExitCode(IntEnum):
    """The exit codes every ``chainloom`` command uses (docs/exit-codes.md is the table)."""

    OK = 0
    """Success."""
    FINDING = 1
    """The command ran and reports a finding (schema drift, nothing found), or a bug."""
    BAD_INPUT = 2
    """Bad input or configuration: usage, unusable files, invalid or refused values."""
    CONFLICT = 3
    """Input contradicts data already stored (the stored data is kept)."""
    UNAVAILABLE = 4
    """A server or store could not be reached, or kept failing past its deadline."""
    INTERRUPTED = 130
    """Stopped by SIGINT or SIGTERM."""


VECTORS_ENV = "CHAINLOOM_VECTORS"
"""Environment variable naming the shared test vectors (a directory or a vectors file)."""

PREVIEW_CHARS = 24
"""How much of a bad input an error message quotes before cutting it with ``...``."""


def each_input(values: tuple[str, ...], stdin: TextIO) -> Iterator[tuple[str, str]]:
    """(label, text) for each input: arguments, or lines of stdin for ``-`` / none.

    Labels count inputs from 1 across arguments and stdin lines alike (``input 3``); blank
    stdin lines are skipped and the others stripped.
    """
    if not values:
        values = ("-",)
    position = 0
    for value in values:
        if value == "-":
            for line in stdin:
                if line.strip():
                    position += 1
                    yield f"input {position}", line.strip()
        else:
            position += 1
            yield f"input {position}", value


def preview(text: str) -> str:
    """``text`` cut to :data:`PREVIEW_CHARS` characters (plus ``...``), to name an input."""
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."


def load_guardian_sets(spec: str) -> GuardianSets:
    """The guardian sets a ``--guardian-set`` value names.

    ``mainnet`` and ``devnet`` are the bundled sets, ``dev`` / ``dev:N`` the dev kit's N
    guardians (19 by default, through :mod:`chainloom.extensions`), anything else a
    guardian-set file. Raises what the wormhole library raises for a bad file, and
    :class:`ValueError` for a bad ``N``.
    """
    from chainloom import extensions
    from chainloom.wormhole import GuardianSets

    if spec == "mainnet":
        return GuardianSets.mainnet()
    if spec == "devnet":
        return GuardianSets.devnet()
    if spec == "dev" or spec.startswith("dev:"):
        count = int(spec[4:]) if spec.startswith("dev:") else 19
        sets: GuardianSets = extensions.load(
            extensions.GUARDIAN_SETS, "dev", what="--guardian-set"
        )(count)
        return sets
    return GuardianSets.from_file(spec)


def describe_os_error(error: OSError) -> str:
    """A few words for why a path could not be used (``does not exist``, ``is a directory``)."""
    if isinstance(error, FileNotFoundError):
        return "does not exist"
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(error, NotADirectoryError):
        return "a part of the path is not a directory"
    if isinstance(error, PermissionError):
        return "permission denied"
    if error.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return error.strerror or str(error)


def describe_decode_error(error: UnicodeDecodeError) -> str:
    """Why bytes are not text, without quoting them: the first bad byte and its offset."""
    bad = error.object[error.start : error.start + 1]
    return f"not UTF-8 text (byte 0x{bad.hex()} at offset {error.start}; a binary file?)"


def read_text_file(path: str | os.PathLike[str], *, option: str | None = None) -> str:
    """The UTF-8 text of a file the user named, or :class:`InputFileError` naming option and path.

    Missing, a directory, unreadable and binary files are all bad input (exit 2), reported in
    one line that never quotes the file's content.
    """
    shown = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputFileError(shown, describe_os_error(error), option=option) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(shown, describe_decode_error(error), option=option) from None


def check_input_file(
    path: str | os.PathLike[str], *, option: str | None = None, sample: int = 64 << 10
) -> None:
    """Fail early, with :class:`InputFileError`, if ``path`` cannot be a text input.

    For files read lazily (dumps, VAA files served to subscribers): opens ``path`` and checks
    that its first ``sample`` bytes are UTF-8, so a missing, unreadable or binary file is
    reported before anything starts rather than half-way through.
    """
    import codecs

    shown = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(sample)
    except OSError as error:
        raise InputFileError(shown, describe_os_error(error), option=option) from None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as error:
        raise InputFileError(shown, describe_decode_error(error), option=option) from None


def source_checkout_vectors() -> Path:
    """``../shared/vectors`` beside the source checkout this package was imported from.

    ``services/chainloom/__init__.py`` -> the checkout's root -> its sibling ``shared``; the
    path need not exist (an installed package has no checkout around it).
    """
    import chainloom

    return Path(chainloom.__file__).resolve().parents[2].parent / "shared" / "vectors"


def resolve_vectors_file(given: Path | None, name: str, *, option: str = "--vectors") -> Path:
    """The vectors file ``name`` (``xrpl_vectors.json``) to read, checked to be JSON text.

    ``given`` is a file or its directory (from the option or ``$CHAINLOOM_VECTORS``); without
    it, :func:`source_checkout_vectors` when that directory exists. Otherwise, and for a file
    that is missing, binary or not JSON, :class:`InputFileError` saying where it looked and
    how to point elsewhere.
    """
    import json

    if given is None:
        default = source_checkout_vectors()
        if not default.is_dir():
            raise InputFileError(
                str(default),
                f"no test vectors there (the default beside the source checkout); pass "
                f"{option} FILE|DIR or set ${VECTORS_ENV}",
                option=f"{option} (default)",
            )
        given = default
    chosen = given / name if given.is_dir() else given
    text = read_text_file(chosen, option=option)
    try:
        data = json.loads(text)
    except ValueError as error:
        raise InputFileError(str(chosen), f"not JSON ({error})", option=option) from None
    if not isinstance(data, list):
        raise InputFileError(str(chosen), "not a list of test vectors", option=option)
    return chosen
