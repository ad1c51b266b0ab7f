"""Ledger sources for the ETL: a dump file and rippled's gRPC API.

The replay server that serves a dump over that same API (for tests and demos without rippled)
is harness: :mod:`chainloom_dev.sim.ledger_replay`.
"""
