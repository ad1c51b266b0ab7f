"""``chainloom events api``: the event store over HTTP, in shapes explorer users know.

Layers, one way (an import-linter contract keeps them): :mod:`.app` (routes, the thread pool,
the HTTP server) -> :mod:`.reads` (the store calls a route makes) -> :mod:`.shapes` (stored rows
to response models) and :mod:`.params` (path and query parsing, cursors) -> :mod:`.models`
(the typed responses, which also generate the OpenAPI document) -> :mod:`.errors`. Only
:mod:`.app` and :mod:`.reads` touch the store; the rest is pure. See ``docs/events-api.md``.
"""
