"""The local stack: real Redis, Cassandra, Bigtable emulator and Kubernetes on loopback.

Used by ``chainloom stack``, the demo and the pytest fixtures. See :mod:`chainloom.stack.manager`.
"""
