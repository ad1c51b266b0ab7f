"""Apache Cassandra 5.0 as one node, from the jars on Maven Central.

No tarball and no Docker: ``cassandra-all`` and its dependencies are copied out of Maven into
the cache once, and the daemon is started with a generated minimal ``cassandra.yaml``, the
module flags Java 17 needs (Cassandra's own ``jvm17-server.options``) and a small heap.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import choose_port, reuse_port, run, spawn, wait_until
from chainloom_dev.stack.errors import InstallError, MissingToolError

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.chainloom</groupId><artifactId>cassandra-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""

_YAML = """cluster_name: chainloom-local
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
num_tokens: 1
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: {storage_port}
native_transport_port: {native_port}
start_native_transport: true
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters: [{{seeds: "127.0.0.1:{storage_port}"}}]
data_file_directories: [{data}/data]
commitlog_directory: {data}/commitlog
saved_caches_directory: {data}/saved_caches
hints_directory: {data}/hints
cdc_raw_directory: {data}/cdc_raw
cdc_enabled: false
commitlog_sync: periodic
commitlog_sync_period: 10s
commitlog_segment_size: 8MiB
auto_snapshot: false
incremental_backups: false
memtable_allocation_type: heap_buffers
disk_access_mode: standard
concurrent_writes: 32
concurrent_reads: 32
"""

_LOGBACK = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level %date{ISO8601} %logger{20} - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
"""

# From Cassandra's conf/jvm17-server.options: the module openings its code relies on.
_JAVA17_FLAGS = [
    "-Djdk.attach.allowAttachSelf=true",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.management/com.sun.jmx.remote.security=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-exports=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
]


def _install_dir() -> Path:
    return cache_dir() / f"cassandra-{versions.CASSANDRA}"


JAVA_CANDIDATES = (
    "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
    "/usr/lib/jvm/java-11-openjdk-amd64/bin/java",
)
"""Debian's JDK 17 and 11, preferred over whatever ``java`` is first on PATH."""


def java17() -> str:
    """A Java 11 or 17 runtime (Cassandra 5.0 refuses newer ones)."""
    configured = os.environ.get("CHAINLOOM_JAVA")
    for candidate in (configured, *JAVA_CANDIDATES):
        if candidate and Path(candidate).exists():
            return candidate
    found = shutil.which("java")
    if found:
        result = run([found, "-version"])
        text = result.stderr + result.stdout
        if ' version "17' in text or ' version "11' in text:
            return found
    raise MissingToolError(
        "Java 17 (for Cassandra 5.0)", "apt-get install -y openjdk-17-jre-headless"
    )


def client_env(native_port: int) -> dict[str, str]:
    """What ``stack env`` exports for this node: the ledger settings' own variables.

    Hosts and port are ``database.cassandra.hosts`` / ``.port``; the replication factor is 1
    because the stack runs one node (a keyspace created with the default of 3 refuses every
    QUORUM write there). ``CHAINLOOM_CASSANDRA_PORT`` stays an input only (the port to start
    on): exporting it would make the next ``stack up`` in another run directory ask for a port
    that is taken.
    """
    return {
        "CHAINLOOM_DATABASE__CASSANDRA__HOSTS": '["127.0.0.1"]',
        "CHAINLOOM_DATABASE__CASSANDRA__PORT": str(native_port),
        "CHAINLOOM_DATABASE__CASSANDRA__REPLICATION_FACTOR": "1",
    }


def node_yaml(storage_port: int, native_port: int, home: Path) -> str:
    """The minimal ``cassandra.yaml`` of one loopback node keeping its data under ``home``."""
    return _YAML.format(storage_port=storage_port, native_port=native_port, data=home)


def daemon_argv(conf: Path, home: Path, heap: str, jmx_port: int) -> list[str]:
    """The command line of a node configured in ``conf`` (its yaml; the logback file is
    written here) with ``heap`` (``-Xms``/``-Xmx``, e.g. ``1G``)."""
    (conf / "logback.xml").write_text(_LOGBACK)
    lib = _install_dir() / "lib"
    jamm = next(lib.glob("jamm-*.jar"))
    return [
        java17(),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-Xss256k",
        "-XX:+UseG1GC",
        "-Djava.net.preferIPv4Stack=true",
        f"-javaagent:{jamm}",
        *_JAVA17_FLAGS,
        "-Dcassandra-foreground=yes",
        f"-Dcassandra.config=file://{conf / 'cassandra.yaml'}",
        f"-Dlogback.configurationFile=file://{conf / 'logback.xml'}",
        f"-Dcassandra.storagedir={home}",
        "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        f"-Dcassandra.jmx.local.port={jmx_port}",
        "-cp",
        f"{conf}:{lib}/*",
        "org.apache.cassandra.service.CassandraDaemon",
    ]


class Cassandra:
    """The XRP Ledger history database."""

    name = "cassandra"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        target = _install_dir()
        if (target / ".complete").exists():
            return
        java17()
        mvn = shutil.which("mvn")
        if mvn is None:
            raise MissingToolError(
                "mvn (Maven, to fetch the Cassandra jars)", "apt-get install -y maven"
            )
        progress.step(
            f"fetching cassandra-all {versions.CASSANDRA} and its jars from Maven Central"
        )

        def build(tmp: Path) -> None:
            (tmp / "pom.xml").write_text(_POM.format(version=versions.CASSANDRA))
            plugin = "org.apache.maven.plugins:maven-dependency-plugin:" + (
                versions.MAVEN_DEPENDENCY_PLUGIN
            )
            result = run(
                [
                    mvn,
                    "-B",
                    "-q",
                    f"{plugin}:copy-dependencies",
                    "-DoutputDirectory=lib",
                    "-DincludeScope=runtime",
                ],
                cwd=tmp,
                timeout=1800,
            )
            jar = tmp / "lib" / f"cassandra-all-{versions.CASSANDRA}.jar"
            if result.returncode != 0 or not jar.exists():
                raise InstallError(
                    self.name, "copying jars with Maven", result.stdout + result.stderr
                )

        install_once(target, build)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        native_port = choose_port(self.name, previous, "CHAINLOOM_CASSANDRA_PORT")
        storage_port = reuse_port(previous, "storage_port")
        jmx_port = reuse_port(previous, "jmx_port")
        home = run_dir / "cassandra"
        if previous is None:
            # A fresh start; a restart after a crash (``previous``) finds its keyspaces again
            # (the commit log replays what was acknowledged).
            shutil.rmtree(home, ignore_errors=True)
        conf = home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "cassandra.yaml").write_text(node_yaml(storage_port, native_port, home))
        heap = os.environ.get("CHAINLOOM_CASSANDRA_HEAP", "1G")
        argv = daemon_argv(conf, home, heap, jmx_port)
        log = run_dir / "logs" / "cassandra.log"
        progress.step(f"starting Cassandra {versions.CASSANDRA} on 127.0.0.1:{native_port}")
        pid = spawn(argv, log)
        address = f"127.0.0.1:{native_port}"
        extra = {"storage_port": str(storage_port), "jmx_port": str(jmx_port)}
        running = Running(
            self.name, "", address, pid, str(log), env=client_env(native_port), extra=extra
        )
        wait_until(
            self.name,
            lambda: bool(self.check(running)),
            pid=pid,
            log=log,
            timeout=float(os.environ.get("CHAINLOOM_CASSANDRA_TIMEOUT", "180")),
            interval=1.0,
        )
        return Running(
            self.name, self.check(running), address, pid, str(log), env=running.env, extra=extra
        )

    def check(self, running: Running) -> str:
        # The driver loads only for a health check: `chainloom-dev stack` starts without it.
        from cassandra.cluster import Cluster  # noqa: PLC0415
        from cassandra.policies import DCAwareRoundRobinPolicy  # noqa: PLC0415

        host, port = running.address.rsplit(":", 1)
        cluster = Cluster(
            [host],
            port=int(port),
            protocol_version=5,
            connect_timeout=3,
            load_balancing_policy=DCAwareRoundRobinPolicy(local_dc="datacenter1"),
        )
        try:
            session = cluster.connect()
            row = session.execute("SELECT release_version FROM system.local").one()
            return str(row.release_version)
        finally:
            cluster.shutdown()
