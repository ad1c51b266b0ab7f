"""Errors of the guardian spy's client and protocol::

ChainloomError
└── SpyError    a spy address, a filter or a replay source is invalid, or the stream failed
"""

from __future__ import annotations

from chainloom.errors import ChainloomError


class SpyError(ChainloomError):
    """A spy address, filter or replay source is invalid, or the spy stream failed."""
