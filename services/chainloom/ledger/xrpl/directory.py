"""Walking directories and NFT page chains with a resumable position, pure.

An account's objects hang off its owner directory: a root page and further pages linked by
``IndexNext``, each listing object keys (``Indexes``). Its NFTs live apart, in NFTokenPages
chained by ``PreviousPageMin`` / ``NextPageMin`` and ending at the page with the highest
possible key. The ``account_*`` methods and the NFT offer listings all walk one of these, a page
of results at a time, so the walk lives here once, reading through a :data:`ReadObjects`
callable (a backend at one ledger, or the cache of the newest): tested with a dict, run over
anything.

A position is a :class:`DirectoryCursor` (the last key returned and the page holding it), shown
to clients as ``"<KEY>,<page>"`` (Clio's account cursor). Resuming checks the key really is on
that page, so a forged or stale marker is an :class:`InvalidMarkerError`, never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.errors import XrplBinaryError

ReadObjects = Callable[[Sequence[bytes]], list[bytes]]
"""Objects by key at one ledger, aligned with the keys (``b""`` where absent)."""

Accept = Callable[[bytes, bytes], bool]
"""Whether an entry ``(key, blob)`` belongs in the answer (a filter by type, say)."""

NFT_PAGES = 0xFFFFFFFF
"""The page number of a cursor that points into an account's NFT pages, not its directory."""

_PREVIOUS_PAGE_MIN = sf.field_key("PreviousPageMin")
_NEXT_PAGE_MIN = sf.field_key("NextPageMin")


class InvalidMarkerError(XrplBinaryError):
    """A marker that does not name a position of this walk (forged, or from another ledger)."""


@dataclass(frozen=True, slots=True)
class DirectoryCursor:
    """Where a walk stopped: after ``entry``, found on page ``page``."""

    entry: bytes
    """The 32-byte key of the last entry returned."""
    page: int
    """The page number holding it (:data:`NFT_PAGES` for an NFT page)."""

    def text(self) -> str:
        """The marker as clients see it: ``"<KEY>,<page>"``."""
        return f"{self.entry.hex().upper()},{self.page}"

    @classmethod
    def parse(cls, text: object) -> DirectoryCursor:
        """A cursor from a marker; :class:`InvalidMarkerError` when it is not one."""
        if not isinstance(text, str) or text.count(",") != 1:
            raise InvalidMarkerError("Malformed cursor.")
        key_text, page_text = text.split(",")
        if len(key_text) != 64 or not page_text.isdigit() or len(page_text) > 20:
            raise InvalidMarkerError("Malformed cursor.")
        try:
            entry = bytes.fromhex(key_text)
        except ValueError:
            raise InvalidMarkerError("Malformed cursor.") from None
        page = int(page_text)
        if page >= 1 << 64:
            raise InvalidMarkerError("Malformed cursor.")
        return cls(entry, page)


@dataclass(frozen=True, slots=True)
class Walked:
    """One page of a walk."""

    entries: list[tuple[bytes, bytes]]
    """The accepted entries as ``(key, blob)``, in directory order."""
    cursor: DirectoryCursor | None
    """Where to resume; ``None`` when the walk reached the end."""


def page_entries(blob: bytes) -> tuple[list[bytes], int]:
    """``(Indexes, IndexNext)`` of a DirectoryNode page (``IndexNext`` 0: the last page)."""
    node = binary.decode(blob)
    raw_indexes = node.get(sf.INDEXES, b"")
    raw_next = node.get(sf.INDEX_NEXT, bytes(8))
    if not isinstance(raw_indexes, bytes) or len(raw_indexes) % 32:
        raise XrplBinaryError("directory page: Indexes is not a list of 256-bit keys")
    if not isinstance(raw_next, bytes) or len(raw_next) != 8:
        raise XrplBinaryError("directory page: IndexNext is not a UInt64")
    keys = [raw_indexes[i : i + 32] for i in range(0, len(raw_indexes), 32)]
    return keys, int.from_bytes(raw_next, "big")


def walk_directory(
    read: ReadObjects,
    root: bytes,
    *,
    limit: int,
    after: DirectoryCursor | None = None,
    accept: Accept | None = None,
) -> Walked:
    """Up to ``limit`` accepted entries of the directory at ``root``, after ``after``.

    An absent root is an empty directory (an account that owns nothing). The cursor is set
    when ``limit`` entries were taken and the directory goes on past the last one.
    """
    page = 0 if after is None else after.page
    blob = read([keylets.directory_page(root, page)])[0]
    if not blob:
        if after is not None:
            raise InvalidMarkerError("Invalid marker: no such directory page.")
        return Walked([], None)
    keys, next_page = page_entries(blob)
    start = 0
    if after is not None:
        if after.entry not in keys:
            raise InvalidMarkerError("Invalid marker: not an entry of that page.")
        start = keys.index(after.entry) + 1
    found: list[tuple[bytes, bytes]] = []
    while True:
        wanted = keys[start:]
        for position, (key, entry) in enumerate(zip(wanted, read(wanted), strict=True)):
            if not entry:
                raise XrplBinaryError(f"directory lists {key.hex().upper()}, which is absent")
            if accept is not None and not accept(key, entry):
                continue
            found.append((key, entry))
            if len(found) == limit:
                more = position < len(wanted) - 1 or next_page != 0
                return Walked(found, DirectoryCursor(key, page) if more else None)
        if next_page == 0:
            return Walked(found, None)
        page = next_page
        blob = read([keylets.directory_page(root, page)])[0]
        if not blob:
            raise XrplBinaryError(f"directory page {page} is missing")
        keys, next_page = page_entries(blob)
        start = 0


def nft_pages(read: ReadObjects, account: bytes) -> list[tuple[bytes, bytes]]:
    """Every NFTokenPage of ``account`` as ``(key, blob)``, lowest key first.

    The chain is entered at its last page (whose key is fixed) and followed backward.
    """
    pages: list[tuple[bytes, bytes]] = []
    key = keylets.nftoken_page_max(account)
    seen: set[bytes] = set()
    while key not in seen:
        seen.add(key)
        blob = read([key])[0]
        if not blob:
            break
        pages.append((key, blob))
        previous = binary.decode(blob).get(_PREVIOUS_PAGE_MIN)
        if not isinstance(previous, bytes) or len(previous) != 32:
            break
        key = previous
    pages.reverse()
    return pages


def page_tokens(blob: bytes) -> list[tuple[bytes, bytes | None]]:
    """The ``(NFTokenID, URI)`` of each token on an NFTokenPage, in page order."""
    tokens: list[tuple[bytes, bytes | None]] = []
    array = binary.decode(blob).get(sf.NFTOKENS, [])
    if not isinstance(array, list):
        raise XrplBinaryError("NFTokenPage: NFTokens is not an array")
    for _, token in array:
        token_id = token.get(sf.NFTOKEN_ID)
        uri = token.get(sf.URI)
        if not isinstance(token_id, bytes) or len(token_id) != 32:
            raise XrplBinaryError("NFTokenPage: a token without a 256-bit NFTokenID")
        tokens.append((token_id, uri if isinstance(uri, bytes) else None))
    return tokens


def next_page_min(blob: bytes) -> bytes | None:
    """The ``NextPageMin`` link of an NFTokenPage (``None`` on the last page)."""
    value = binary.decode(blob).get(_NEXT_PAGE_MIN)
    return value if isinstance(value, bytes) and len(value) == 32 else None
