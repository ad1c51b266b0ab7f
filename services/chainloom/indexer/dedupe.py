"""A bounded set of recently seen VAA digests: the cheap first filter of guardian copies.

Why: a spy forwards every guardian's copy of a signed VAA, about 19 per message on mainnet.
Most are byte-identical, and each would otherwise cost a verification and a read of its row.
Hashing the bytes (BLAKE2b, 16 bytes) and looking the digest up costs about a microsecond, so
identical copies are dropped before any other work. Copies whose signature subsets differ
hash differently and go on: the signature cache makes their verification cheap, and the
store's planner adds the signatures they bring.

The set is bounded: past ``capacity`` digests the oldest is forgotten (first in, first out;
copies of one VAA arrive within seconds of each other). A copy arriving after its digest was
forgotten is verified and written again, which the store answers "unchanged". Memory is about
100 bytes per digest, 10 MB at the default 100,000.
"""

from __future__ import annotations

from collections import OrderedDict
from hashlib import blake2b

DIGEST_BYTES = 16
"""Length of the digests kept (128 bits: collisions are not a concern at these counts)."""


def vaa_digest(raw: bytes) -> bytes:
    """The key of one VAA's exact bytes in the recent set."""
    return blake2b(raw, digest_size=DIGEST_BYTES).digest()


class RecentDigests:
    """Digests of the last ``capacity`` distinct VAAs seen."""

    __slots__ = ("_seen", "capacity")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        """Most digests remembered."""
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def __contains__(self, digest: object) -> bool:
        return digest in self._seen

    def add(self, digest: bytes) -> bool:
        """Remember ``digest``; False if it was already remembered (a copy)."""
        if digest in self._seen:
            return False
        self._seen[digest] = None
        if len(self._seen) > self.capacity:
            self._seen.popitem(last=False)
        return True

    def forget(self, digest: bytes) -> None:
        """Forget one digest (a VAA that was dropped, so its next copy is taken)."""
        self._seen.pop(digest, None)
