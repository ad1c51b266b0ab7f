"""chainloom's own Wormhole-style contracts on EVM chains: sources, compiled artifacts, deployment.

Why the project writes its own: the relayer must be proven against a chain that accepts or
refuses exactly what a real token bridge would, and the rules are the ones the Python verifier
already implements (``chainloom.wormhole.verify``). The Solidity sources live in
``contracts/`` with their compiled ABI and bytecode (``contracts/artifacts.json``, with the
compiler version); :mod:`chainloom.evm.compile` rebuilds them with solcjs and a test fails when
the committed artifacts differ. :mod:`chainloom.evm.deploy` puts a guardian set and a token
bridge on a chain. The relayer's chain adapter (``chainloom.relayer.evm_adapter``) uses the
artifacts' ABI. This package module imports nothing heavy.
"""
