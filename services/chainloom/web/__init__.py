"""The project's one HTTP stack: FastAPI apps on uvicorn, behind one wire guard.

:mod:`.wire` makes uvicorn's h11 protocol answer malformed, oversized and slow requests in the
app's JSON (and bounds connections); :mod:`.server` runs an app with its limits; :mod:`.app`
makes an API's FastAPI app; :mod:`.errors` is the JSON error shape and the log policy. The
relayer's REST endpoint, the events API, the ledger API and the indexer's probes are built on
it; it imports nothing else of chainloom.
"""
