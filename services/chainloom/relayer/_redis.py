"""Small helpers for the synchronous redis-py client.

redis-py annotates its commands as returning ``Awaitable[T] | T`` (one signature for the
sync and asyncio clients). The relayer only ever uses the synchronous client, so
:func:`sync` narrows the type once, here, instead of a ``cast`` at every call.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar, cast

T = TypeVar("T")


def sync(value: Awaitable[T] | T) -> T:
    """The result of a synchronous redis-py call, typed without the ``Awaitable`` half."""
    return cast(T, value)


def text(value: bytes | str) -> str:
    """A Redis reply as text, whether or not the client decodes responses."""
    return value.decode() if isinstance(value, bytes) else value
