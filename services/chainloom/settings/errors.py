"""Errors of the settings loader (one tree, rooted in :class:`chainloom.errors.ChainloomError`)::

    ChainloomError
    └── SettingsError                settings that cannot be read or do not validate
        └── UnknownModelError        `config schema NAME` or `config show` names no model

Every message is one line that names where the value came from (the file, the environment
variable or the command line), the dotted field path and what was wrong, so the CLI prints it
as it is and exits 2.
"""

from __future__ import annotations

from chainloom.errors import ChainloomError


class SettingsError(ChainloomError, ValueError):
    """A settings file, environment variable or flag is unreadable or fails validation."""


class UnknownModelError(SettingsError):
    """No settings model is registered under the name asked for."""
