"""The token-bridge relayer: validate signed VAAs, queue them in crash-safe Redis tables, and
redeem each exactly once on its target chain with one worker per {target chain + wallet}.

Layers, as everywhere in chainloom: :mod:`~chainloom.relayer.model` and
:mod:`~chainloom.relayer.validation` are pure; :mod:`~chainloom.relayer.tables` (Redis),
:mod:`~chainloom.relayer.adapters` (chains) and the spy client/server are adapters;
:mod:`~chainloom.relayer.worker` and the listener wire them; the CLI starts them.
This package module stays light (no Redis, gRPC or crypto import) so that importing one part
does not load the others.
"""
