"""The local stack: real Redis, Cassandra, Bigtable emulator and Kubernetes on loopback.

Used by ``chainloom-dev stack``, the demo and the pytest fixtures. See
:mod:`chainloom_dev.stack.manager`.
"""
