"""The token-bridge relayer: validate signed VAAs, queue them in crash-safe Redis tables, and
redeem each exactly once on its target chain with one worker per {target chain + wallet}.

Layers, as everywhere in chainloom: :mod:`~chainloom.relayer.model` and
:mod:`~chainloom.relayer.validation` are pure; :mod:`~chainloom.relayer.tables` (Redis),
:mod:`~chainloom.relayer.adapters` (the chain Protocol) and the spy client are adapters;
:mod:`~chainloom.relayer.worker` and the listener wire them; the CLI starts them. The
simulated chains and the spy server that tests and demos use are in :mod:`chainloom_dev.sim`.
This package module stays light (no Redis, gRPC or crypto import) so that importing one part
does not load the others.
"""
