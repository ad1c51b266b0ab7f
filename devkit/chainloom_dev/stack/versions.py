"""Pinned versions of everything the local stack fetches or builds.

One place to bump a version; the cache keys on these, so a bump means a fresh install beside
the old one (remove the old one from ``~/.cache/chainloom`` by hand if disk is short).
"""

from __future__ import annotations

KUBERNETES = "v1.36.3"
"""kube-apiserver, kube-controller-manager, kube-scheduler and kubectl (one Go build)."""

ETCD = "v3.6.16"
"""etcd built from ``go.etcd.io/etcd/server/v3``; Kubernetes 1.36 expects 3.6."""

KWOK = "v0.8.0"
"""KWOK, which simulates nodes and makes Pods Running without containers."""

HELM = "v4.2.4"
"""helm, built from ``helm.sh/helm/v4``."""

CASSANDRA = "5.0.9"
"""``org.apache.cassandra:cassandra-all`` from Maven Central; 5.0 is the first to run on Java 17."""

MAVEN_DEPENDENCY_PLUGIN = "3.8.1"
"""Used to copy the Cassandra jars with their dependencies."""

BIGTABLE_EMULATOR_MODULE = "cloud.google.com/go/bigtable"
"""Go module whose ``cmd/emulator`` is built when the machine has no ``cbtemulator``."""

BIGTABLE_EMULATOR = "v1.58.0"
"""Version of the module above built as a fallback emulator."""

OTEL_COLLECTOR = "v0.165.0"
"""The OpenTelemetry Collector's builder and its (unstable-numbered) components."""

OTEL_COLLECTOR_STABLE = "v1.71.0"
"""The collector's stable-numbered modules released with :data:`OTEL_COLLECTOR` (confmap
providers)."""

GETH = "v1.17.10"
"""geth from ``github.com/ethereum/go-ethereum/cmd/geth``: the two dev chains (``--evm``)."""

SOLC = "0.8.37"
"""solcjs from npm (``solc``): compiles the project's contracts (``chainloom-dev evm compile``)."""

COREDNS = "v1.15.0"
"""CoreDNS from ``github.com/coredns/coredns``, built with only the plugins the node's cluster
DNS needs (``components/dns.py``)."""

SPARK_OPERATOR = "v2.5.2"
"""Kubeflow's spark-operator (``github.com/kubeflow/spark-operator/v2``, ``cmd/operator``) and
its CRDs: the node's SparkApplication controller (``components/spark_operator.py``). The proxy
refuses the module's version list; exact versions download."""
