"""A real Kubernetes node on this machine: containerd, runc, CNI, a kubelet and kube-proxy.

Docker cannot run on the project's machines, but a node can (``docs/stack.md``, "The node"):
containerd, runc, the CNI plugins, iptables and conntrack come from Debian (installed like
Redis), the kubelet and kube-proxy are built from the same ``k8s.io/kubernetes`` module and
flags as the control plane, and the pod sandbox ("pause") image is a tiny static program built
here and imported into containerd, since no image registry is reachable.

What this machine needs is set here and nowhere else: ``restrict_oom_score_adj`` (the sandbox
lacks CAP_SYS_RESOURCE), the cgroupfs driver on cgroup v1 (``failCgroupV1: false``), swap
allowed, the kubelet on loopback with anonymous access (the API server has no kubelet client
certificate), node IP = the pod bridge's gateway (the kubelet refuses a loopback node IP) and
node name ``localhost`` (the API server dials the node by name).

Everything lives under ``<run dir>/node`` where the programs allow it. What cannot (network
namespaces, iptables chains, cgroups, the bridge, a few kubelet paths) is host-wide, so one
node runs per machine: the run directory that owns it is written to :data:`OWNER_FILE`, a
second ``stack up --node`` from another run directory is refused with its name, and
``stack down`` removes all of it again (pods first, through the runtime, so each pod's IP,
veth, network namespace and mounts go the way they came).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from chainloom_dev.net import free_port
from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once, is_installed
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._oci import ImageConfig, write_archive
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import alive, choose_port, run, spawn, wait_until
from chainloom_dev.stack.components._apt import ensure_command, ensure_file
from chainloom_dev.stack.components._go import run_go
from chainloom_dev.stack.components.dns import CLUSTER_DOMAIN
from chainloom_dev.stack.components.kubernetes import (
    build_node_binaries,
    k8s_dir,
    kubectl,
    node_binaries_dir,
)
from chainloom_dev.stack.errors import NodeConflictError, StackError, StartError

NODE_NAME = "localhost"
"""The node's name: the API server reaches the kubelet by it, and it resolves to loopback."""

NODE_LABEL = "chainloom.io/node=real"
"""A label on the real node (KWOK's simulated nodes carry ``type=kwok`` instead)."""

PAUSE_IMAGE = "localhost/chainloom/pause:1"
"""The pod sandbox image, built from ``node_tools/pause``."""

OWNER_FILE = Path("/run/chainloom-node.owner")
"""Holds the run directory whose node is up on this machine (the host-wide parts are its)."""

CNI_BIN_DIR = Path("/usr/lib/cni")
"""Where Debian's ``containernetworking-plugins`` puts the plugins."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""The cgroup mount: v1 hierarchies (``cpu``, ``memory``, ...) on the project's machines."""

_NODE_TOOLS = Path(__file__).parent / "node_tools"
_DEBIAN_TOOLS = (
    ("containerd", "containerd"),
    ("runc", "runc"),
    ("iptables", "iptables"),
    ("conntrack", "conntrack"),
    ("socat", "socat"),
    ("ip", "iproute2"),
)


# ---------------------------------------------------------------------------------------------
# Where one run directory's node keeps its things


@dataclass(frozen=True, slots=True)
class NodeLayout:
    """The paths and host-wide names of the node of one run directory."""

    home: Path
    """``<run dir>/node``: containerd's root and state, CNI, kubelet, pod logs."""

    bridge: str
    """The pod bridge's interface name (derived from the run directory, <= 15 characters)."""

    network: str
    """The CNI network name (its cached results in ``/var/lib/cni`` carry it)."""

    @property
    def socket(self) -> Path:
        """containerd's gRPC socket (the kubelet's runtime endpoint)."""
        return self.home / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        """containerd's ``config.toml``."""
        return self.home / "containerd.toml"

    @property
    def cni_conf_dir(self) -> Path:
        """The directory with the CNI network configuration."""
        return self.home / "cni" / "net.d"

    @property
    def kubelet_root(self) -> Path:
        """The kubelet's ``--root-dir`` (volumes, pod directories, plugins)."""
        return self.home / "kubelet"

    @property
    def pod_logs(self) -> Path:
        """Where container logs go (``kubectl logs`` reads them through the kubelet)."""
        return self.home / "pod-logs"


def layout(run_dir: Path) -> NodeLayout:
    """The node layout of ``run_dir``."""
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]
    return NodeLayout(run_dir / "node", bridge=f"cl{digest}", network=f"chainloom-{digest}")


def _claim_host(run_dir: Path) -> None:
    """Record ``run_dir`` as the owner of this machine's node, unless another one's is up."""
    mine = str(run_dir.resolve())
    if OWNER_FILE.exists():
        owner = OWNER_FILE.read_text().strip()
        if owner != mine and _node_is_up(Path(owner)):
            raise NodeConflictError(owner)
    OWNER_FILE.write_text(mine + "\n")


def _node_is_up(run_dir: Path) -> bool:
    state_file = run_dir / "state.json"
    if not state_file.exists():
        return False
    with contextlib.suppress(ValueError, OSError):
        state = json.loads(state_file.read_text())
        return any(
            alive(int(state[name]["pid"])) for name in ("containerd", "kubelet") if name in state
        )
    return False


def _release_host(run_dir: Path) -> None:
    if OWNER_FILE.exists() and OWNER_FILE.read_text().strip() == str(run_dir.resolve()):
        OWNER_FILE.unlink()


def _pick_subnet(bridge: str, previous: Running | None) -> str:
    """A /24 under 10.88.0.0/16 that no interface or route of this machine uses yet."""
    if previous is not None and previous.extra.get("subnet"):
        return previous.extra["subnet"]
    in_use = run(["ip", "-4", "-o", "addr", "show"]).stdout + run(["ip", "-4", "route"]).stdout
    start = int(bridge[2:4], 16)
    for offset in range(254):
        third = (start + offset) % 254 + 1
        if f"10.88.{third}." not in in_use:
            return f"10.88.{third}.0/24"
    raise StartError("containerd", "no free /24 left in 10.88.0.0/16 for the pod network")


def _gateway(subnet: str) -> str:
    return subnet.rsplit(".", 1)[0] + ".1"


def _ensure_bridge(bridge: str, subnet: str) -> None:
    """Create the pod bridge with its gateway address (the kubelet's node IP) before CNI runs."""
    gateway = _gateway(subnet)
    if run(["ip", "link", "show", bridge]).returncode != 0:
        created = run(["ip", "link", "add", bridge, "type", "bridge"])
        if created.returncode != 0:
            raise StartError("containerd", f"cannot create bridge {bridge}", created.stderr)
    if f" {gateway}/" not in run(["ip", "-4", "-o", "addr", "show", "dev", bridge]).stdout:
        added = run(["ip", "addr", "add", f"{gateway}/24", "dev", bridge])
        if added.returncode != 0:
            raise StartError("containerd", f"cannot address bridge {bridge}", added.stderr)
    run(["ip", "link", "set", bridge, "up"])


# ---------------------------------------------------------------------------------------------
# The node's own small programs: the pause image and the pod sandbox remover


def node_tools_dir() -> Path:
    """Where ``pause``, ``podctl`` and the pause image archive are cached."""
    digest = hashlib.sha256()
    for source in sorted(_NODE_TOOLS.rglob("*.go")):
        digest.update(source.relative_to(_NODE_TOOLS).as_posix().encode())
        digest.update(source.read_bytes())
    return cache_dir() / f"node-tools-{versions.KUBERNETES}-{digest.hexdigest()[:12]}"


def _build_node_tools(progress: Progress) -> Path:
    target = node_tools_dir()
    if is_installed(target):
        return target
    build_node_binaries(progress)  # the wrapper module the tools are compiled in

    def build(tmp: Path) -> None:
        progress.step("building the pause image and podctl (first run only)")
        for name in ("go.mod", "go.sum"):
            shutil.copy2(k8s_dir() / name, tmp / name)
        shutil.copytree(_NODE_TOOLS, tmp / "cmd", ignore=shutil.ignore_patterns("__pycache__"))
        run_go(
            [
                "build",
                "-trimpath",
                "-ldflags",
                "-s -w",
                "-o",
                str(tmp / "bin") + "/",
                "./cmd/pause",
                "./cmd/podctl",
            ],
            tmp,
            "containerd",
            "compiling pause and podctl",
            CGO_ENABLED="0",
        )
        rootfs = tmp / "pause-rootfs"
        rootfs.mkdir()
        shutil.copy2(tmp / "bin" / "pause", rootfs / "pause")
        write_archive(
            rootfs,
            tmp / "pause.oci.tar",
            PAUSE_IMAGE,
            ImageConfig(entrypoint=("/pause",), env=(), user="65535:65535"),
        )
        shutil.rmtree(rootfs)
        shutil.rmtree(tmp / "cmd")

    return install_once(target, build)


def ctr(address: Path, *args: str, timeout: float = 600) -> str:
    """Run ``ctr`` against the containerd at ``address`` in the Kubernetes namespace."""
    result = run(["ctr", "--address", str(address), "-n", "k8s.io", *args], timeout=timeout)
    if result.returncode != 0:
        raise StackError(f"ctr {' '.join(args)}: {(result.stderr or result.stdout).strip()}")
    return result.stdout


def import_image(address: Path, archive: Path) -> None:
    """Load an OCI archive into the node's containerd (unpacked for the overlayfs snapshotter)."""
    ctr(address, "images", "import", str(archive))


# ---------------------------------------------------------------------------------------------
# Configuration files


def containerd_config(node: NodeLayout) -> str:
    """containerd 1.6's configuration, every path under the node's home."""
    return f"""version = 2
root = "{node.home / "containerd" / "root"}"
state = "{node.home / "containerd" / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{node.socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{node.home / "containerd" / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{node.home / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{node.cni_conf_dir}"
    max_conf_num = 1
"""


def cni_config(node: NodeLayout, subnet: str) -> str:
    """A bridge network with host-local addresses on ``subnet`` (no masquerade: no egress)."""
    config = {
        "cniVersion": "1.0.0",
        "name": node.network,
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,
                "isGateway": True,
                "hairpinMode": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet, "gateway": _gateway(subnet)}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(node.home / "cni" / "ipam"),
                },
            }
        ],
    }
    return json.dumps(config, indent=2)


def kubelet_config(node: NodeLayout, port: int, healthz_port: int, dns: str | None) -> str:
    """The kubelet's configuration for this machine (see the module docstring)."""
    config: dict[str, object] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": "127.0.0.1",
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "containerRuntimeEndpoint": f"unix://{node.socket}",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "authentication": {
            "anonymous": {"enabled": True},
            "webhook": {"enabled": False},
            "x509": {},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "podLogsDir": str(node.pod_logs),
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "/etc/resolv.conf",
        "serializeImagePulls": False,
        "maxPods": 110,
    }
    if dns:
        config["clusterDNS"] = [dns]
    return json.dumps(config, indent=2)


def kube_proxy_config(kubeconfig: str, subnet: str, healthz_port: int, metrics_port: int) -> str:
    """kube-proxy in iptables mode, leaving the machine's sysctls alone where it can."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig},
        "hostnameOverride": NODE_NAME,
        "mode": "iptables",
        "clusterCIDR": subnet,
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "conntrack": {"maxPerCore": 0},
        "iptables": {"localhostNodePorts": False, "masqueradeAll": False},
    }
    return json.dumps(config, indent=2)


# ---------------------------------------------------------------------------------------------
# Components


class Containerd:
    """containerd + runc + CNI from Debian, with the pause image imported."""

    name = "containerd"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        if os.geteuid() != 0:
            raise StackError(
                "the node needs root (containerd, network namespaces, iptables, cgroups): "
                "run chainloom-dev stack up --node as root"
            )
        for command, package in _DEBIAN_TOOLS:
            ensure_command(command, package, progress)
        ensure_file(CNI_BIN_DIR / "bridge", "containernetworking-plugins", progress)
        _build_node_tools(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        node = layout(run_dir)
        _claim_host(run_dir)
        subnet = _pick_subnet(node.bridge, previous)
        progress.step(f"creating pod bridge {node.bridge} on {subnet}")
        _ensure_bridge(node.bridge, subnet)
        node.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        (node.cni_conf_dir / "10-chainloom.conflist").write_text(cni_config(node, subnet))
        node.containerd_config.write_text(containerd_config(node))
        log = run_dir / "logs" / "containerd.log"
        progress.step(f"starting containerd on {node.socket}")
        pid = spawn(["containerd", "--config", str(node.containerd_config)], log)
        extra = {
            "socket": str(node.socket),
            "bridge": node.bridge,
            "network": node.network,
            "subnet": subnet,
            "gateway": _gateway(subnet),
            "home": str(node.home),
            "run_dir": str(run_dir),
        }
        env = {"CONTAINERD_ADDRESS": str(node.socket), "CONTAINERD_NAMESPACE": "k8s.io"}
        running = Running(self.name, "", str(node.socket), pid, str(log), env=env, extra=extra)
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=60)
        progress.step("importing the pause image")
        import_image(node.socket, node_tools_dir() / "pause.oci.tar")
        return Running(
            self.name, self.check(running), running.address, pid, str(log), env=env, extra=extra
        )

    def check(self, running: Running) -> str:
        output = run(["ctr", "--address", running.extra["socket"], "version"], timeout=10)
        for line in output.stdout.splitlines()[::-1]:
            key, _, value = line.strip().partition(":")
            if key == "Version" and output.returncode == 0:
                return value.strip()
        raise RuntimeError(f"containerd does not answer: {output.stderr.strip()}")

    def before_stop(self, running: Running) -> None:
        """Stop and remove every pod sandbox while containerd still runs."""
        if not alive(running.pid):
            return
        result = run(
            [str(node_tools_dir() / "bin" / "podctl"), running.extra["socket"], "remove-all"],
            timeout=180,
        )
        if result.returncode != 0:
            raise StackError(f"removing the node's pods failed: {result.stderr.strip()}")
        for task in ctr(Path(running.extra["socket"]), "tasks", "ls", "-q").split():
            with contextlib.suppress(StackError):
                ctr(Path(running.extra["socket"]), "tasks", "kill", "-s", "SIGKILL", task)

    def after_stop(self, running: Running) -> None:
        """Unmount what is left, remove the bridge and CNI caches, and release the machine."""
        home = Path(running.extra["home"])
        _unmount_under(home)
        _remove_cgroups(("kubepods", "k8s.io"))
        for shim_sockets in (Path("/run/containerd/s"), Path("/run/containerd")):
            with contextlib.suppress(OSError):
                shim_sockets.rmdir()
        run(["ip", "link", "delete", running.extra["bridge"]])
        for cached in Path("/var/lib/cni/results").glob(f"{running.extra['network']}-*"):
            cached.unlink(missing_ok=True)
        for directory in (Path("/var/lib/cni/results"), Path("/var/lib/cni")):
            with contextlib.suppress(OSError):
                directory.rmdir()
        _release_host(Path(running.extra["run_dir"]))


class Kubelet:
    """The kubelet, registering node ``localhost`` with the stack's API server."""

    name = "kubelet"
    requires: tuple[str, ...] = ("kube-apiserver", "containerd", "cluster-dns")

    def install(self, progress: Progress) -> None:
        build_node_binaries(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        node = layout(run_dir)
        kubeconfig = deps["kube-apiserver"].extra["kubeconfig"]
        gateway = deps["containerd"].extra["gateway"]
        port = choose_port(self.name, previous)
        healthz_port = free_port()
        for directory in (node.kubelet_root, node.pod_logs):
            directory.mkdir(parents=True, exist_ok=True)
        config = node.home / "kubelet.json"
        dns = deps["cluster-dns"].extra["cluster_ip"]
        config.write_text(kubelet_config(node, port, healthz_port, dns=dns))
        binary = node_binaries_dir() / "bin" / "kubelet"
        argv = [
            str(binary),
            f"--config={config}",
            f"--kubeconfig={kubeconfig}",
            f"--root-dir={node.kubelet_root}",
            f"--cert-dir={node.home / 'kubelet-pki'}",
            f"--node-ip={gateway}",
            f"--hostname-override={NODE_NAME}",
            f"--node-labels={NODE_LABEL}",
        ]
        log = run_dir / "logs" / "kubelet.log"
        progress.step(f"starting the kubelet (node {NODE_NAME}, node IP {gateway})")
        pid = spawn(argv, log)
        extra = {
            "kubeconfig": kubeconfig,
            "healthz": f"http://127.0.0.1:{healthz_port}/healthz",
            "pod_logs": str(node.pod_logs),
            "kubelet_root": str(node.kubelet_root),
        }
        running = Running(self.name, "", f"127.0.0.1:{port}", pid, str(log), extra=extra)
        wait_until(
            self.name,
            lambda: bool(self.check(running)),
            pid=pid,
            log=log,
            timeout=180,
            interval=1.0,
        )
        return Running(self.name, self.check(running), running.address, pid, str(log), extra=extra)

    def check(self, running: Running) -> str:
        with urllib.request.urlopen(running.extra["healthz"], timeout=3) as response:  # noqa: S310
            if response.read() != b"ok":
                raise RuntimeError("the kubelet's /healthz is not ok")
        node = json.loads(
            kubectl(running.extra["kubeconfig"], "get", "node", NODE_NAME, "-o", "json")
        )
        ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
        if not ready or ready[0]["status"] != "True":
            reason = ready[0].get("message", "") if ready else "no Ready condition yet"
            raise RuntimeError(f"node {NODE_NAME} is not Ready: {reason}")
        return str(node["status"]["nodeInfo"]["kubeletVersion"])

    def before_stop(self, running: Running) -> None:
        del running

    def after_stop(self, running: Running) -> None:
        """Remove the host-wide things the kubelet made: iptables chains, log links (its pods'
        cgroups go once containerd has removed the pods)."""
        _remove_kube_chains()
        pod_logs = running.extra["pod_logs"]
        containers = Path("/var/log/containers")
        if containers.is_dir():
            for link in containers.iterdir():
                if link.is_symlink() and os.readlink(link).startswith(pod_logs):
                    link.unlink()
            with contextlib.suppress(OSError):
                containers.rmdir()
        shutil.rmtree("/var/lib/kubelet/device-plugins", ignore_errors=True)
        with contextlib.suppress(OSError):
            Path("/var/lib/kubelet").rmdir()


class KubeProxy:
    """kube-proxy in iptables mode: Services (ClusterIP, NodePort) reach the node's pods."""

    name = "kube-proxy"
    requires: tuple[str, ...] = ("kube-apiserver", "containerd", "kubelet")

    def install(self, progress: Progress) -> None:
        build_node_binaries(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        node = layout(run_dir)
        kubeconfig = deps["kube-apiserver"].extra["kubeconfig"]
        subnet = deps["containerd"].extra["subnet"]
        healthz_port = choose_port(self.name, previous)
        config = node.home / "kube-proxy.json"
        config.write_text(kube_proxy_config(kubeconfig, subnet, healthz_port, free_port()))
        binary = node_binaries_dir() / "bin" / "kube-proxy"
        log = run_dir / "logs" / "kube-proxy.log"
        progress.step("starting kube-proxy (iptables mode)")
        pid = spawn([str(binary), f"--config={config}"], log)
        version = run([str(binary), "--version"]).stdout.strip().split()[-1]
        running = Running(
            self.name,
            version,
            f"127.0.0.1:{healthz_port}",
            pid,
            str(log),
            extra={"bin": str(binary)},
        )
        wait_until(
            self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=90, interval=1
        )
        return running

    def check(self, running: Running) -> str:
        url = f"http://{running.address}/healthz"
        with urllib.request.urlopen(url, timeout=3) as response:
            if response.status != 200:
                raise RuntimeError(f"kube-proxy /healthz answered {response.status}")
        return running.version

    def before_stop(self, running: Running) -> None:
        del running

    def after_stop(self, running: Running) -> None:
        """``kube-proxy --cleanup`` removes its chains and rules."""
        run([running.extra["bin"], "--cleanup", "--v=0"], timeout=60)


class ApiserverRelay:
    """Lets pods reach the API server (loopback-only) through the ``kubernetes`` Service.

    socat listens on the bridge gateway and forwards to the API server; the Service's
    EndpointSlice points at it, so in-cluster clients (``KUBERNETES_SERVICE_HOST``, the
    service-account token) work as in any cluster.
    """

    name = "apiserver-relay"
    requires: tuple[str, ...] = ("kube-apiserver", "containerd")

    def install(self, progress: Progress) -> None:
        ensure_command("socat", "socat", progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        apiserver = deps["kube-apiserver"]
        gateway = deps["containerd"].extra["gateway"]
        port = int(previous.address.rsplit(":", 1)[1]) if previous is not None else free_port()
        target = apiserver.address
        argv = [
            "socat",
            f"TCP-LISTEN:{port},bind={gateway},fork,reuseaddr",
            f"TCP:{target}",
        ]
        log = run_dir / "logs" / "apiserver-relay.log"
        progress.step(f"relaying {gateway}:{port} to the API server for pods")
        pid = spawn(argv, log)
        kubeconfig = apiserver.extra["kubeconfig"]
        kubectl(kubeconfig, "apply", "-f", "-", stdin=_endpoint_slice(gateway, port))
        running = Running(
            self.name,
            "socat",
            f"{gateway}:{port}",
            pid,
            str(log),
            extra={"kubeconfig": kubeconfig},
        )
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=30)
        return running

    def check(self, running: Running) -> str:
        host, port = running.address.rsplit(":", 1)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with (
            socket.create_connection((host, int(port)), timeout=3) as raw,
            context.wrap_socket(raw) as tls,
        ):
            if not tls.version():
                raise RuntimeError("no TLS session through the relay")
        return running.version

    def before_stop(self, running: Running) -> None:
        del running

    def after_stop(self, running: Running) -> None:
        del running


def _endpoint_slice(gateway: str, port: int) -> str:
    return json.dumps(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kubernetes-chainloom-relay",
                "namespace": "default",
                "labels": {
                    "kubernetes.io/service-name": "kubernetes",
                    "endpointslice.kubernetes.io/managed-by": "chainloom-stack",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [gateway], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }
    )


# ---------------------------------------------------------------------------------------------
# Cleaning up what is host-wide


def _unmount_under(directory: Path) -> None:
    """Lazily unmount every mount point below ``directory`` (deepest first)."""
    prefix = str(directory.resolve())
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    for point in sorted(points, key=len, reverse=True):
        run(["umount", "-l", point])


def _remove_kube_chains() -> None:
    """Delete the ``KUBE-*`` chains (and the rules jumping to them) the kubelet created."""
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        for table in ("filter", "nat", "mangle"):
            dump = run([f"{tool}-save", "-t", table]).stdout
            chains = {
                line[1:].split()[0] for line in dump.splitlines() if line.startswith(":KUBE-")
            }
            if not chains:
                continue
            for line in dump.splitlines():
                parts = line.split()
                if line.startswith("-A ") and "-j" in parts:
                    jump = parts[parts.index("-j") + 1]
                    if jump in chains and parts[1] not in chains:
                        run([tool, "-t", table, "-D", *parts[1:]])
            for chain in chains:
                run([tool, "-t", table, "-F", chain])
            for chain in chains:
                run([tool, "-t", table, "-X", chain])


def _remove_cgroups(names: tuple[str, ...]) -> None:
    """Remove the named top-level cgroups (bottom-up) in every hierarchy; they must be empty."""
    if not CGROUP_ROOT.is_dir():
        return
    for hierarchy in CGROUP_ROOT.iterdir():
        for name in names:
            top = hierarchy / name
            if not top.is_dir():
                continue
            for directory in sorted(
                (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
            ):
                with contextlib.suppress(OSError):
                    directory.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()


def leftovers(run_dir: Path) -> list[str]:
    """What of a node is still on this machine (empty after a clean ``stack down``)."""
    node = layout(run_dir)
    found: list[str] = []
    if run(["ip", "link", "show", node.bridge]).returncode == 0:
        found.append(f"bridge {node.bridge}")
    prefix = str(node.home.resolve())
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point.startswith(prefix):
            found.append(f"mount {point}")
    for table in ("filter", "nat", "mangle"):
        dump = run(["iptables-save", "-t", table]).stdout if shutil.which("iptables-save") else ""
        found += [
            f"iptables {table} chain {line[1:].split()[0]}"
            for line in dump.splitlines()
            if line.startswith(":KUBE-")
        ]
    if CGROUP_ROOT.is_dir():
        for hierarchy in CGROUP_ROOT.iterdir():
            found += [
                f"cgroup {hierarchy / name}"
                for name in ("kubepods", "k8s.io")
                if (hierarchy / name).is_dir()
            ]
    if Path("/run/containerd").exists():
        found.append("directory /run/containerd")
    netns = Path("/var/run/netns")
    if netns.is_dir():
        found += [
            f"netns {entry.name}" for entry in netns.iterdir() if entry.name.startswith("cni-")
        ]
    found += [f"process {pid}" for pid in _processes_under(node.home)]
    return found


def _processes_under(home: Path) -> list[int]:
    """Live processes whose command line names the node's home (shims, containerd, kubelet)."""
    marker = str(home.resolve()).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


__all__ = [
    "NODE_LABEL",
    "NODE_NAME",
    "PAUSE_IMAGE",
    "ApiserverRelay",
    "Containerd",
    "KubeProxy",
    "Kubelet",
    "NodeLayout",
    "ctr",
    "import_image",
    "layout",
    "leftovers",
]
