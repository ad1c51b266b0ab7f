"""Kubeflow's spark-operator on the node: SparkApplications run for real, as in a cluster.

chainloom's operator renders SparkApplications; a spark-operator controller runs them: it calls
``$SPARK_HOME/bin/spark-submit --deploy-mode cluster`` for each, which creates the driver pod,
whose Spark creates the executor pods, and it writes the application's state
(``SUBMITTED``, ``RUNNING``, ``COMPLETED``, ...) into its status. The stack builds the
controller from the Go module proxy at :data:`chainloom_dev.stack.versions.SPARK_OPERATOR`
(``cmd/operator``; its ``go.mod`` has ``replace`` lines, so it is built inside the downloaded
module, not ``go install``-ed) and runs ``controller start`` on the host, like the control plane:

- against the stack's kubeconfig, with ``KUBERNETES_SERVICE_HOST``/``PORT`` naming the loopback
  API server (the controller builds spark-submit's ``--master`` from them);
- ``SPARK_HOME`` = the pyspark package of the interpreter running the stack: a whole Spark
  distribution (``bin/spark-submit`` and the Kubernetes jars), so no Spark download;
- watching only namespaces labelled :data:`NAMESPACE_LABEL` (``--namespace-selector``): the
  cluster tier's tests and other namespaces keep SparkApplications that nothing runs;
- leader election on (a Lease in ``kube-system``), no webhook (``env``, volumes and tolerations
  of an application's pods need the webhook or pod templates; chainloom renders ``envVars``),
  no UI Service, health and metrics on 127.0.0.1 only.

Its CRDs are the ones of the same module (the chart's ``crds/``), applied before it starts; the
tests apply the same files (:func:`crds_dir`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once, is_installed
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import alive, choose_port, reuse_port, spawn, stop, wait_until
from chainloom_dev.stack.components._go import run_go
from chainloom_dev.stack.components.kubernetes import kubectl
from chainloom_dev.stack.errors import MissingToolError, StartError

MODULE = "github.com/kubeflow/spark-operator/v2"
"""The Go module the controller is built from."""

CRD_FILES = (
    "sparkoperator.k8s.io_sparkapplications.yaml",
    "sparkoperator.k8s.io_scheduledsparkapplications.yaml",
    "sparkoperator.k8s.io_sparkconnects.yaml",
)
"""The module's chart's CRDs (the controller also watches SparkConnects: all three must exist)."""

CRD_NAMES = tuple(name.removeprefix("sparkoperator.k8s.io_").removesuffix(".yaml")
                  + ".sparkoperator.k8s.io" for name in CRD_FILES)  # fmt: skip
"""The CRDs' names as the API server knows them."""

NAMESPACE_LABEL = ("chainloom.io/spark-operator", "enabled")
"""The label of the namespaces the stack's spark-operator runs applications in."""

LEASE_NAMESPACE = "kube-system"
"""Where its leader-election Lease lives (a namespace every cluster has)."""

LEASE_NAME = "chainloom-spark-operator"
"""The Lease's name."""


# ---------------------------------------------------------------------------------------------
# Fetching and building


def module_source(component: str = "spark-operator") -> Path:
    """The module's source in Go's module cache (downloaded at the pinned version if needed)."""
    tmp = cache_dir()
    info = run_go(
        ["mod", "download", "-json", f"{MODULE}@{versions.SPARK_OPERATOR}"],
        tmp,
        component,
        f"downloading {MODULE}@{versions.SPARK_OPERATOR}",
    )
    return Path(json.loads(info)["Dir"])


def crds_dir() -> Path:
    """The pinned version's CRDs, copied once from its chart into the cache."""
    target = cache_dir() / f"spark-operator-crds-{versions.SPARK_OPERATOR}"
    if is_installed(target):
        return target

    def copy(tmp: Path) -> None:
        chart = module_source() / "charts" / "spark-operator-chart" / "crds"
        for name in CRD_FILES:
            shutil.copyfile(chart / name, tmp / name)

    return install_once(target, copy)


def operator_dir() -> Path:
    """Where the controller of the pinned version is cached."""
    return cache_dir() / f"spark-operator-{versions.SPARK_OPERATOR}"


def operator_binary() -> Path:
    """The cached controller (whether or not it is built yet)."""
    return operator_dir() / "bin" / "spark-operator"


def build_spark_operator(progress: Progress) -> Path:
    """Build the controller into the cache unless it is there; return its directory."""
    target = operator_dir()
    if is_installed(target):
        return target

    def build(tmp: Path) -> None:
        version = versions.SPARK_OPERATOR
        progress.step(
            f"building the spark-operator {version} from the Go module proxy "
            "(first run only: several minutes)"
        )
        source = module_source()
        run_go(
            [
                "build",
                "-trimpath",
                "-ldflags",
                f"-s -w -X k8s.io/component-base/version.gitVersion={version}",
                "-o",
                str(tmp / "bin" / "spark-operator"),
                "./cmd/operator",
            ],
            source,
            "spark-operator",
            "compiling",
            CGO_ENABLED="0",
        )

    return install_once(target, build)


def spark_home() -> Path:
    """pyspark's package directory in this interpreter's environment (a Spark distribution)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise MissingToolError(
            "pyspark", "pip install -e '.[spark]' (the spark-operator runs its spark-submit)"
        )
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-submit").exists():
        raise MissingToolError("spark-submit", f"a full pyspark install ({home} has no bin/)")
    return home


# ---------------------------------------------------------------------------------------------
# Running


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """One controller process: what it watches and where it reports."""

    kubeconfig: str
    """The stack's kubeconfig (an admin client certificate)."""

    server: str
    """The API server, ``https://127.0.0.1:PORT`` (spark-submit's master)."""

    namespace_selector: str
    """``--namespace-selector``: the namespaces whose applications it runs."""

    lease_name: str
    """Its leader-election Lease in :data:`LEASE_NAMESPACE`."""

    health_port: int
    """``/healthz`` and ``/readyz`` on 127.0.0.1."""

    metrics_port: int
    """``/metrics`` on 127.0.0.1."""


def controller_argv(binary: Path, config: ControllerConfig) -> list[str]:
    """``spark-operator controller start`` for ``config`` (pure)."""
    return [
        str(binary),
        "controller",
        "start",
        f"--kubeconfig={config.kubeconfig}",
        f"--namespace-selector={config.namespace_selector}",
        "--leader-election=true",
        f"--leader-election-lock-name={config.lease_name}",
        f"--leader-election-lock-namespace={LEASE_NAMESPACE}",
        f"--health-probe-bind-address=127.0.0.1:{config.health_port}",
        "--enable-metrics=true",
        f"--metrics-bind-address=127.0.0.1:{config.metrics_port}",
        "--enable-ui-service=false",
        "--controller-threads=4",
    ]


def controller_env(config: ControllerConfig, home: Path) -> dict[str, str]:
    """The environment its spark-submit runs in: Spark, the master, the client's kubeconfig."""
    host, port = config.server.removeprefix("https://").rsplit(":", 1)
    return {
        "SPARK_HOME": str(home),
        "KUBECONFIG": config.kubeconfig,
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
    }


def apply_crds(kubeconfig: str) -> None:
    """Apply the pinned CRDs (server-side) and wait until the API server serves them."""
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts",
            "--field-manager=chainloom-stack", "-f", str(crds_dir()))  # fmt: skip
    deadline = time.monotonic() + 60
    waiting = list(CRD_NAMES)
    while waiting:
        found = json.loads(kubectl(kubeconfig, "get", "crd", waiting[0], "-o", "json"))
        conditions = (found.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            waiting.pop(0)
        elif time.monotonic() > deadline:
            raise RuntimeError(f"CRD {waiting[0]} is not Established after 60 s")
        else:
            time.sleep(0.5)


def start_controller(
    name: str,
    run_dir: Path,
    config: ControllerConfig,
    log: Path,
    environment: Mapping[str, str] | None = None,
) -> Running:
    """Start a controller for ``config``; return once ``/readyz`` answers."""
    binary = operator_binary()
    env = {**controller_env(config, spark_home()), **(environment or {})}
    home = run_dir / name
    home.mkdir(parents=True, exist_ok=True)
    pid = spawn(controller_argv(binary, config), log, env=env, cwd=home)
    running = Running(
        name,
        versions.SPARK_OPERATOR,
        f"127.0.0.1:{config.health_port}",
        pid,
        str(log),
        extra={
            "kubeconfig": config.kubeconfig,
            "health": f"http://127.0.0.1:{config.health_port}/healthz",
            "ready": f"http://127.0.0.1:{config.health_port}/readyz",
            "metrics": f"http://127.0.0.1:{config.metrics_port}/metrics",
            "health_port": str(config.health_port),
            "metrics_port": str(config.metrics_port),
            "namespace_selector": config.namespace_selector,
            "lease": f"{LEASE_NAMESPACE}/{config.lease_name}",
            "spark_home": env["SPARK_HOME"],
        },
    )
    wait_until(name, lambda: _answers(running), pid=pid, log=log, timeout=90)
    return running


def _answers(running: Running) -> bool:
    try:
        check_controller(running)
    except OSError:
        return False
    return True


def check_controller(running: Running) -> str:
    """``/healthz`` and ``/readyz`` answer 200 and ``/metrics`` serves the controller's
    metrics; its version."""
    for key in ("health", "ready", "metrics"):
        with urllib.request.urlopen(running.extra[key], timeout=3) as response:  # noqa: S310
            if response.status != 200:
                raise RuntimeError(f"spark-operator {key} answered {response.status}")
    return running.version


def lease_holder(kubeconfig: str, lease: str = f"{LEASE_NAMESPACE}/{LEASE_NAME}") -> str:
    """Who holds the leader-election Lease now ('' when nobody does)."""
    namespace, name = lease.split("/", 1)
    try:
        found = json.loads(kubectl(kubeconfig, "-n", namespace, "get", "lease", name, "-o", "json"))
    except RuntimeError:
        return ""
    return str(found.get("spec", {}).get("holderIdentity") or "")


class SparkOperator:
    """The spark-operator controller on the host, for namespaces labelled
    :data:`NAMESPACE_LABEL`."""

    name = "spark-operator"
    requires: tuple[str, ...] = ("kube-apiserver",)

    def install(self, progress: Progress) -> None:
        spark_home()
        build_spark_operator(progress)
        crds_dir()

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        apiserver = deps["kube-apiserver"]
        kubeconfig = apiserver.extra["kubeconfig"]
        progress.step(f"applying the spark-operator {versions.SPARK_OPERATOR} CRDs")
        try:
            apply_crds(kubeconfig)
        except RuntimeError as error:
            raise StartError(self.name, "applying its CRDs failed", str(error)) from None
        key, value = NAMESPACE_LABEL
        config = ControllerConfig(
            kubeconfig=kubeconfig,
            server=apiserver.extra["server"],
            namespace_selector=f"{key}={value}",
            lease_name=LEASE_NAME,
            health_port=choose_port(self.name, previous),
            metrics_port=reuse_port(previous, "metrics_port"),
        )
        progress.step(
            f"starting the spark-operator {versions.SPARK_OPERATOR} for namespaces {key}={value}"
        )
        log = run_dir / "logs" / f"{self.name}.log"
        return start_controller(self.name, run_dir, config, log)

    def check(self, running: Running) -> str:
        return check_controller(running)


def stop_controller(running: Running, *, kill: bool = False) -> None:
    """Stop a controller started by :func:`start_controller`; ``kill``: SIGKILL, so it neither
    releases its Lease nor finishes what it was doing (a crash)."""
    if not kill:
        stop(running.pid)
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(running.pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while alive(running.pid) and time.monotonic() < deadline:
        time.sleep(0.1)


__all__ = [
    "CRD_FILES",
    "CRD_NAMES",
    "LEASE_NAME",
    "MODULE",
    "NAMESPACE_LABEL",
    "ControllerConfig",
    "SparkOperator",
    "apply_crds",
    "build_spark_operator",
    "check_controller",
    "controller_argv",
    "controller_env",
    "crds_dir",
    "lease_holder",
    "operator_binary",
    "spark_home",
    "start_controller",
    "stop_controller",
]
