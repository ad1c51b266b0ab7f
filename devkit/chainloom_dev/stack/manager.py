"""Bring the local stack up, report on it and take it down.

The manager knows the components and their order; it keeps ``state.json`` in the run directory
(one entry per running component: pid, address, version, log, client environment) so that
``status``, ``env`` and ``down`` work from any later process, and test fixtures can reuse a stack
a developer already started. A component whose process died keeps its entry until ``up``
restarts it, and the restart is handed that entry: clients were configured with its address, so
it comes back on the same port (and Redis with the same data directory).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from chainloom_dev.stack import _process
from chainloom_dev.stack._install import locked
from chainloom_dev.stack._model import CleansUp, Component, Progress, Running, SilentProgress
from chainloom_dev.stack._paths import run_dir
from chainloom_dev.stack.components.bigtable import BigtableEmulator
from chainloom_dev.stack.components.cassandra import Cassandra
from chainloom_dev.stack.components.cassandra_secured import CassandraSecured
from chainloom_dev.stack.components.dns import ClusterDns
from chainloom_dev.stack.components.evm import CHAINS as EVM_CHAINS
from chainloom_dev.stack.components.evm import Geth, Solc
from chainloom_dev.stack.components.image import PLAIN_RECIPE, NodeImage
from chainloom_dev.stack.components.kubernetes import (
    Etcd,
    Helm,
    KubeApiserver,
    KubeControllerManager,
    Kubectl,
    KubeScheduler,
    Kwok,
)
from chainloom_dev.stack.components.node import ApiserverRelay, Containerd, Kubelet, KubeProxy
from chainloom_dev.stack.components.otel import OtelCollector
from chainloom_dev.stack.components.redis import Redis
from chainloom_dev.stack.components.spark_image import SPARK_RECIPE
from chainloom_dev.stack.components.spark_operator import SparkOperator
from chainloom_dev.stack.errors import StackError, UnknownComponentError

_COMPONENTS: tuple[Component, ...] = (
    Redis(),
    BigtableEmulator(),
    Cassandra(),
    CassandraSecured(),  # in no group: started only when asked for (the secured-store tests)
    OtelCollector(),
    Kubectl(),
    Helm(),
    Etcd(),
    KubeApiserver(),
    KubeControllerManager(),
    KubeScheduler(),
    Kwok(),
    Containerd(),
    ClusterDns(),
    Kubelet(),
    KubeProxy(),
    ApiserverRelay(),
    SparkOperator(),
    NodeImage(PLAIN_RECIPE),
    NodeImage(SPARK_RECIPE),  # in no group: built only when asked for (stack image --spark)
    Solc(),
    *(Geth(chain) for chain in EVM_CHAINS),
)
BY_NAME: dict[str, Component] = {component.name: component for component in _COMPONENTS}

GROUPS: dict[str, tuple[str, ...]] = {
    "kubernetes": ("kubectl", "helm", "etcd", "kube-apiserver"),
    "full": ("kube-controller-manager", "kube-scheduler", "kwok"),
    "node": (
        "containerd",
        "cluster-dns",
        "kubelet",
        "kube-proxy",
        "apiserver-relay",
        "spark-operator",
        "chainloom-image",
    ),
    "geth": tuple(chain.component for chain in EVM_CHAINS),
    "evm": ("solc", *(chain.component for chain in EVM_CHAINS)),
}
"""Shorthands for ``--only``: ``kubernetes`` is the API server tier, ``full`` adds the
controllers and KWOK's simulated node, ``node`` a real node running real containers, ``geth``
the two dev EVM chains and ``evm`` those and the Solidity compiler (``--evm``)."""

_GROUP_NEEDS: dict[str, tuple[str, ...]] = {
    "full": ("kubernetes",),
    "node": ("kubernetes", "kube-controller-manager", "kube-scheduler"),
}
"""What starting a group brings up besides its members (pods need the controllers)."""

DEFAULT = ("redis", "bigtable", "cassandra", *GROUPS["kubernetes"])


@dataclass(frozen=True, slots=True)
class Health:
    """One row of ``stack status``."""

    name: str
    """Component name."""

    version: str
    """The version it reports now ('' if it did not answer)."""

    address: str
    """Where it listens."""

    pid: int
    """Its process id (0 for tools)."""

    healthy: bool
    """True if its round-trip check passed just now."""

    detail: str
    """Why it is unhealthy ('' when healthy)."""


def _state_file() -> Path:
    return run_dir() / "state.json"


def load_state() -> dict[str, Running]:
    """What the last ``up`` recorded (components whose process died are still listed)."""
    path = _state_file()
    if not path.exists():
        return {}
    raw = json.loads(path.read_text())
    return {name: Running(**entry) for name, entry in raw.items()}


def _save_state(state: dict[str, Running]) -> None:
    path = _state_file()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({name: asdict(r) for name, r in state.items()}, indent=2))
    tmp.rename(path)


def resolve(
    names: Iterable[str], *, full: bool = False, node: bool = False, evm: bool = False
) -> list[str]:
    """Expand groups and dependencies of ``names`` into start order."""
    wanted: set[str] = set()

    def add(name: str) -> None:
        if name in GROUPS:
            for member in (*GROUPS[name], *_GROUP_NEEDS.get(name, ())):
                add(member)
            return
        if name not in BY_NAME:
            raise UnknownComponentError(name, [*BY_NAME, *GROUPS])
        if name not in wanted:
            wanted.add(name)
            for dependency in BY_NAME[name].requires:
                add(dependency)

    for name in names:
        add(name)
    if full:
        add("full")
        add("otel")
    if node:
        add("node")
    if evm:
        add("evm")
    return [component.name for component in _COMPONENTS if component.name in wanted]


def _is_up(running: Running) -> bool:
    return running.pid == 0 or _process.alive(running.pid)


def up(
    names: Iterable[str] = DEFAULT,
    *,
    full: bool = False,
    node: bool = False,
    evm: bool = False,
    progress: Progress | None = None,
) -> dict[str, Running]:
    """Install what is missing and start what is not running; return the wanted components."""
    progress = progress or SilentProgress()
    order = resolve(names, full=full, node=node, evm=evm)
    for name in order:
        # Installing (which may build for many minutes) holds only that component's own
        # install lock, so another session can use the components that are already running.
        current = load_state().get(name)
        if current is None or not _is_up(current):
            BY_NAME[name].install(progress)
        with locked("stack-state"):
            state = load_state()
            current = state.get(name)
            if current is not None and _is_up(current):
                continue
            component = BY_NAME[name]
            deps = {dep: state[dep] for dep in component.requires}
            # ``current`` is a dead record (a crash): restart on its port, with its data.
            state[name] = component.start(run_dir(), deps, progress, current)
            _save_state(state)
    state = load_state()
    return {name: state[name] for name in order}


def refresh(name: str, progress: Progress | None = None) -> Running:
    """Install and start ``name`` again even though it is recorded as up (a rebuilt image)."""
    progress = progress or SilentProgress()
    component = BY_NAME[name]
    component.install(progress)
    with locked("stack-state"):
        state = load_state()
        missing = [dep for dep in component.requires if dep not in state]
        if missing:
            raise StackError(
                f"{name} needs {', '.join(missing)} running: chainloom-dev stack up --node"
            )
        deps = {dep: state[dep] for dep in component.requires}
        state[name] = component.start(run_dir(), deps, progress, state.get(name))
        _save_state(state)
        return state[name]


def status(names: Iterable[str] | None = None) -> list[Health]:
    """Check every recorded component (or only ``names``) with a real round trip."""
    state = load_state()
    rows: list[Health] = []
    for name in names if names is not None else state:
        running = state.get(name)
        if running is None:
            rows.append(Health(name, "", "", 0, False, "not started"))
            continue
        if not _is_up(running):
            rows.append(
                Health(
                    name,
                    running.version,
                    running.address,
                    running.pid,
                    False,
                    "process is not running",
                )
            )
            continue
        try:
            version = BY_NAME[name].check(running)
        except Exception as error:
            rows.append(
                Health(
                    name,
                    running.version,
                    running.address,
                    running.pid,
                    False,
                    f"{type(error).__name__}: {error}",
                )
            )
        else:
            rows.append(Health(name, version, running.address, running.pid, True, ""))
    return rows


def environment(state: dict[str, Running] | None = None) -> dict[str, str]:
    """Client environment variables of every running component (for ``stack env``)."""
    env: dict[str, str] = {}
    for running in (state if state is not None else load_state()).values():
        if _is_up(running):
            env.update(running.env)
    return env


def down(names: Iterable[str] | None = None) -> list[str]:
    """Stop the named (default: all) components by pid, newest first; return what stopped."""
    with locked("stack-state"):
        state = load_state()
        chosen = list(state) if names is None else resolve_running(names, state)
        stopped: list[str] = []
        for name in reversed([c.name for c in _COMPONENTS if c.name in chosen]):
            running = state[name]
            component = BY_NAME[name]
            if isinstance(component, CleansUp):
                component.before_stop(running)
            if running.pid:
                _process.stop(running.pid)
                if _process.alive(running.pid):
                    raise StackError(f"{name} (pid {running.pid}) did not stop")
            if isinstance(component, CleansUp):
                component.after_stop(running)
            del state[name]
            _save_state(state)
            stopped.append(name)
        _save_state(state)
        if not state:
            for leftover in (
                "redis",
                "cassandra",
                "cassandra-secured",
                "etcd",
                "kwok",
                "node",
                "cluster-dns",
                "spark-operator",
                *GROUPS["geth"],
            ):
                shutil.rmtree(run_dir() / leftover, ignore_errors=True)
        return stopped


def resolve_running(names: Iterable[str], state: dict[str, Running]) -> list[str]:
    """The recorded components among the expansion of ``names``."""
    expanded: list[str] = []
    for name in names:
        members = GROUPS.get(name, (name,))
        if name == "kubernetes":
            members = (*members, *GROUPS["full"], *GROUPS["node"])
        for member in members:
            if member not in BY_NAME:
                raise UnknownComponentError(member, [*BY_NAME, *GROUPS])
            if member in state:
                expanded.append(member)
    return expanded
