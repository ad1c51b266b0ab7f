"""Every error the EVM package raises on purpose, in one tree::

    ChainloomError
    └── EvmError
        ├── CompileError        solcjs failed or reported errors (its messages attached)
        ├── ArtifactError       the committed artifacts are missing or do not match their sources
        ├── RpcUnavailableError the chain's JSON-RPC endpoint cannot be reached
        ├── ChainMismatchError  the endpoint serves another chain than the one configured
        └── DeployError         a deployment transaction failed or reverted

No message ever carries key material: a wallet is named by its address only.
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class EvmError(ChainloomError):
    """Base class of the EVM package's deliberate errors."""


class CompileError(EvmError):
    """The Solidity compiler failed or reported errors."""


class ArtifactError(EvmError):
    """The committed contract artifacts are missing, unreadable or stale."""


class RpcUnavailableError(EvmError, UnavailableError):
    """The JSON-RPC endpoint cannot be reached (the CLI exits 4)."""


class ChainMismatchError(EvmError):
    """The endpoint's ``eth_chainId`` is not the chain id the settings name."""


class DeployError(EvmError):
    """A deployment or set-up transaction failed or reverted."""
