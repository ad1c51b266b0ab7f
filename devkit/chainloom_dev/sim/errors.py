"""Errors of the development harness itself (not of the product it imitates).

A fake that stands in for a product part raises that part's errors; only a request no real
system could be asked (a guardian set of 300 guardians, a signer that is not a guardian) is a
harness error. It subclasses the product error its callers already catch, so the CLI's
``except WormholeError`` still turns it into one clear line::

    WormholeError (chainloom.wormhole.errors)
    └── DevGuardianError    the test-guardian kit was asked for something impossible
"""

from __future__ import annotations

from chainloom.wormhole.errors import WormholeError

__all__ = ["DevGuardianError"]


class DevGuardianError(WormholeError):
    """The test-guardian kit was asked for an impossible signer list or set size."""
