"""XRP Ledger history: Clio's backend in Python.

``types`` (values), ``backend`` (the interface every database implements and ``make_backend``),
``cassandra`` / ``sqlite`` (the implementations), ``successor`` (pure successor-list upkeep),
``xrpl`` (binary parsing) and ``etl`` (copying ledgers in). Heavy clients are imported only by
the module that needs them, so importing the package stays cheap.
"""
