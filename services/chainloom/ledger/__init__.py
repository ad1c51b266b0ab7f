"""XRP Ledger history: Clio's backend in Python.

``types`` (values), ``backend`` (the interface every database implements), ``cassandra`` /
``sqlite`` (the implementations), ``service`` (``make_backend`` / ``open_backend``: the one way
to open one), ``successor`` (pure successor-list upkeep), ``xrpl`` (binary parsing) and ``etl``
(copying ledgers in). The package itself imports nothing, so importing it stays cheap.
"""
