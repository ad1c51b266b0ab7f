"""Ledger sources for the ETL: a dump file, rippled's gRPC API, and a replay server serving a
dump over that same API (for tests and demos without rippled)."""
