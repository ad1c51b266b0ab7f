"""``chainloom ledger api``: rippled's (and Clio's) public JSON-RPC API answered from the ledger
history backend. Pure request parsing (:mod:`.requests`) and response shaping (:mod:`.shapes`),
the methods over :class:`~chainloom.ledger.backend.BackendInterface` (:mod:`.methods`), and a
thin FastAPI app for JSON-RPC and WebSocket on the project's HTTP stack (:mod:`.server`)."""
