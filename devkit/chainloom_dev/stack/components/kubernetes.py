"""A real Kubernetes control plane on loopback, built from the Go module proxy (envtest-style).

``k8s.io/kubernetes`` cannot be ``go install``-ed (its go.mod maps every staging module with a
``replace`` line), so a throw-away wrapper module requires it and replaces each staging module
with its published ``v0.X.Y`` twin; the binaries are stamped with the real version so
``/version``, kubectl and helm see ``v1.X.Y``. etcd needs the same trick in its own wrapper.
KWOK, helm and the Bigtable emulator are plain ``go install``s.

The base tier is etcd + kube-apiserver (+ kubectl, helm); ``--full`` adds the controller
manager, the scheduler and KWOK with one simulated node, so Deployments get Pods that become
Running without any container runtime. KWOK manages only nodes labelled ``type=kwok``, which are
tainted so that only pods asking for them land there: a real node (``--node``,
:mod:`chainloom_dev.stack.components.node`) runs everything else.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import ssl
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once, is_installed
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import choose_port, reuse_port, run, spawn, wait_until
from chainloom_dev.stack.components._go import go_binary, run_go
from chainloom_dev.stack.components._tool import InstalledTool
from chainloom_dev.stack.errors import MissingToolError, StartError

_K8S_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
_NODE_BINARIES = ("kubelet", "kube-proxy")
_STAGES = Path(__file__).parent / "kwok_stages"
NODE_NAME = "kwok-node-0"
KWOK_NODE_LABEL = "type=kwok"
"""KWOK manages only nodes with this label: a real node (``stack up --node``) is the kubelet's."""
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/16"
"""ClusterIPs (65k: the 1,000-RelayerPool bench needs one per listener; a /24 ran out at 254).
Its first address, 10.0.0.1, is the ``kubernetes`` Service's, in the serving certificate;
the node's pod networks (10.88.x.0/24) and the host's routes lie outside it."""
KUBERNETES_SERVICE_IP = str(next(ipaddress.ip_network(SERVICE_CLUSTER_IP_RANGE).hosts()))
"""The ``kubernetes`` Service's ClusterIP (the range's first address), in the certificate."""
KWOK_TAINT = "kwok.x-k8s.io/node=fake:NoSchedule"
"""The simulated nodes' taint: only pods that tolerate it (and select ``type=kwok``) land there."""


# ---------------------------------------------------------------------------------------------
# Building from the Go module proxy


def k8s_dir() -> Path:
    """Where the Kubernetes binaries of the pinned version are cached."""
    return cache_dir() / f"kubernetes-{versions.KUBERNETES}"


def _build_kubernetes(progress: Progress) -> Path:
    target = k8s_dir()
    if is_installed(target):
        return target
    version = versions.KUBERNETES
    staging_version = "v0." + version.removeprefix("v1.")

    def build(tmp: Path) -> None:
        name = "kubernetes"
        progress.step(f"resolving k8s.io/kubernetes@{version} from the Go module proxy")
        run_go(
            ["mod", "init", "local/chainloom-k8s-build"], tmp, name, "creating the wrapper module"
        )
        info = json.loads(
            run_go(
                ["mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
                tmp,
                name,
                "downloading k8s.io/kubernetes",
            )
        )
        upstream = Path(info["GoMod"]).read_text()
        edits: list[str] = []
        for line in upstream.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0].startswith("k8s.io/") and parts[1] == "v0.0.0":
                edits.append(f"-replace={parts[0]}={parts[0]}@{staging_version}")
            if line.startswith("godebug ") and "=" in line:
                edits.append(f"-godebug={line.removeprefix('godebug ').strip()}")
        run_go(["mod", "edit", *edits], tmp, name, "adding the staging replaces")
        progress.step("downloading the Kubernetes module graph (first run only)")
        _compile_kubernetes(
            tmp,
            _K8S_BINARIES,
            name,
            "compiling kube-apiserver, kube-controller-manager, kube-scheduler and kubectl "
            f"{version} (first run only: 10-25 minutes on 2 cores)",
            progress,
        )

    return install_once(target, build)


def _compile_kubernetes(
    module: Path, binaries: Sequence[str], component: str, message: str, progress: Progress
) -> None:
    """Add ``binaries`` (``cmd/`` names) as tools of the wrapper module and build them into
    ``module/bin`` with the flags every Kubernetes binary of the stack is built with."""
    version = versions.KUBERNETES
    tools = [f"k8s.io/kubernetes/cmd/{binary}@{version}" for binary in binaries]
    run_go(["get", "-tool", *tools], module, component, "go get -tool")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ldflags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        ldflags += [
            f"-X {package}.{key}={value}"
            for key, value in (
                ("gitVersion", version),
                ("gitMajor", "1"),
                ("gitMinor", version.split(".")[1]),
                ("gitTreeState", "clean"),
                ("buildDate", stamp),
            )
        ]
    progress.step(message)
    run_go(
        [
            "build",
            "-trimpath",
            "-tags",
            "selinux,notest",
            "-ldflags",
            " ".join(ldflags),
            "-o",
            str(module / "bin") + "/",
            *(f"k8s.io/kubernetes/cmd/{b}" for b in binaries),
        ],
        module,
        component,
        "compiling",
        CGO_ENABLED="0",
    )


def node_binaries_dir() -> Path:
    """Where the kubelet and kube-proxy of the pinned version are cached."""
    return cache_dir() / f"kubernetes-node-{versions.KUBERNETES}"


def build_node_binaries(progress: Progress) -> Path:
    """The kubelet and kube-proxy, built in a copy of the control plane's wrapper module with the
    same flags (so most of the build comes from Go's build cache: about 2 minutes more)."""
    target = node_binaries_dir()
    if is_installed(target):
        return target
    control_plane = _build_kubernetes(progress)

    def build(tmp: Path) -> None:
        for name in ("go.mod", "go.sum"):
            shutil.copy2(control_plane / name, tmp / name)
        _compile_kubernetes(
            tmp,
            _NODE_BINARIES,
            "kubelet",
            f"compiling kubelet and kube-proxy {versions.KUBERNETES} (first run only: "
            "2-5 minutes when the control plane's build cache is warm)",
            progress,
        )

    return install_once(target, build)


def etcd_dir() -> Path:
    """Where the pinned etcd is cached."""
    return cache_dir() / f"etcd-{versions.ETCD}"


def _build_etcd(progress: Progress) -> Path:
    def build(tmp: Path) -> None:
        progress.step(f"building etcd {versions.ETCD} from the Go module proxy")
        module = f"go.etcd.io/etcd/server/v3@{versions.ETCD}"
        run_go(["mod", "init", "local/chainloom-etcd-build"], tmp, "etcd", "creating the wrapper")
        run_go(["get", "-tool", module], tmp, "etcd", "go get -tool")
        run_go(
            [
                "build",
                "-trimpath",
                "-ldflags",
                "-s -w",
                "-o",
                str(tmp / "bin" / "etcd"),
                "go.etcd.io/etcd/server/v3",
            ],
            tmp,
            "etcd",
            "compiling",
            CGO_ENABLED="0",
        )

    return install_once(etcd_dir(), build)


def _go_install(component: str, target: Path, package: str, ldflags: str = "") -> Path:
    def build(tmp: Path) -> None:
        args = ["install", "-trimpath"]
        if ldflags:
            args += ["-ldflags", ldflags]
        run_go(
            [*args, package],
            tmp,
            component,
            f"go install {package}",
            GOBIN=str(tmp / "bin"),
            CGO_ENABLED="0",
        )

    return install_once(target, build)


def kwok_dir() -> Path:
    """Where the pinned KWOK is cached."""
    return cache_dir() / f"kwok-{versions.KWOK}"


def helm_dir() -> Path:
    """Where the pinned helm is cached."""
    return cache_dir() / f"helm-{versions.HELM}"


def module_version(binary: Path) -> str:
    """The main module version recorded in a Go binary's build information."""
    result = run([go_binary(), "version", "-m", str(binary)])
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "mod":
            return parts[2]
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Certificates and kubeconfig


def _openssl(args: Sequence[str], cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise MissingToolError("openssl", "apt-get install -y openssl")
    result = run([openssl, *args], cwd=cwd)
    if result.returncode != 0:
        raise StartError("kube-apiserver", f"openssl {args[0]} failed", result.stderr)


def ensure_pki(directory: Path) -> Path:
    """A throw-away CA, the API server's serving cert, an admin client cert and SA keys."""
    if (directory / "admin.crt").exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    sans = (
        f"IP:127.0.0.1,IP:{KUBERNETES_SERVICE_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    )
    (directory / "server.cnf").write_text(
        f"[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName={sans}\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (directory / "client.cnf").write_text("[ext]\nextendedKeyUsage=clientAuth\n")
    steps: list[list[str]] = [
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3650",
            "-subj",
            "/CN=chainloom-local-ca",
        ],
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "apiserver.key",
            "-out",
            "apiserver.csr",
            "-subj",
            "/CN=kube-apiserver",
            "-config",
            "server.cnf",
        ],
        [
            "x509",
            "-req",
            "-in",
            "apiserver.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "3650",
            "-out",
            "apiserver.crt",
            "-extfile",
            "server.cnf",
            "-extensions",
            "ext",
        ],
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "admin.key",
            "-out",
            "admin.csr",
            "-subj",
            "/O=system:masters/CN=chainloom-admin",
        ],
        [
            "x509",
            "-req",
            "-in",
            "admin.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "3650",
            "-out",
            "admin.crt",
            "-extfile",
            "client.cnf",
            "-extensions",
            "ext",
        ],
        ["genrsa", "-out", "sa.key", "2048"],
        ["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"],
    ]
    for step in steps:
        _openssl(step, directory)
    return directory


def write_kubeconfig(path: Path, pki: Path, server: str) -> Path:
    """A kubeconfig for the admin client certificate (read by kubectl, kopf, the client)."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: chainloom\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {pki / 'ca.crt'}\n"
        f"users:\n- name: chainloom-admin\n  user:\n    client-certificate: {pki / 'admin.crt'}\n"
        f"    client-key: {pki / 'admin.key'}\n"
        "contexts:\n- name: chainloom\n  context: {cluster: chainloom, user: chainloom-admin}\n"
        "current-context: chainloom\n"
    )
    return path


def _tls_get(url: str, pki: Path, timeout: float = 3.0) -> bytes:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    with urllib.request.urlopen(url, context=context, timeout=timeout) as response:  # noqa: S310
        body: bytes = response.read()
        return body


def _insecure_get(url: str, timeout: float = 3.0) -> bytes:
    """GET a loopback health endpoint whose serving certificate is self-signed."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=context, timeout=timeout) as response:  # noqa: S310
        body: bytes = response.read()
        return body


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    """Run the stack's kubectl against ``kubeconfig``; its output, or a RuntimeError naming
    the command."""
    binary = k8s_dir() / "bin" / "kubectl"
    result = run([str(binary), f"--kubeconfig={kubeconfig}", *args], stdin=stdin, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def _binary_version(binary: Path) -> str:
    output = run([str(binary), "--version"]).stdout.strip()
    return output.split()[-1] if output else "unknown"


# ---------------------------------------------------------------------------------------------
# Components


class Kubectl(InstalledTool):
    """kubectl of the same version as the API server."""

    name = "kubectl"

    def _binary(self) -> Path:
        return k8s_dir() / "bin" / "kubectl"

    def install(self, progress: Progress) -> None:
        _build_kubernetes(progress)

    def check(self, running: Running) -> str:
        output = run([running.address, "version", "--client", "-o", "json"]).stdout
        return str(json.loads(output)["clientVersion"]["gitVersion"])


class Helm(InstalledTool):
    """helm, for installing the chart against the local API server."""

    name = "helm"

    def _binary(self) -> Path:
        return helm_dir() / "bin" / "helm"

    def install(self, progress: Progress) -> None:
        if is_installed(helm_dir()):
            return
        progress.step(f"building helm {versions.HELM} from the Go module proxy")
        major = versions.HELM.split(".")[0]
        module = f"helm.sh/helm/{major}"
        _go_install(
            self.name,
            helm_dir(),
            f"{module}/cmd/helm@{versions.HELM}",
            f"-s -w -X {module}/internal/version.version={versions.HELM}",
        )

    def check(self, running: Running) -> str:
        return run([running.address, "version", "--short"]).stdout.strip().split("+")[0]


class Etcd:
    """etcd, the API server's storage, without fsync (test data only)."""

    name = "etcd"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        _build_etcd(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        client_port = choose_port(self.name, previous, "CHAINLOOM_ETCD_PORT")
        peer_port = reuse_port(previous, "peer_port")
        data = run_dir / "etcd"
        if previous is None:
            # A fresh start; a restart after a crash (``previous``) keeps the cluster's objects.
            shutil.rmtree(data, ignore_errors=True)
        client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
        argv = [
            str(etcd_dir() / "bin" / "etcd"),
            "--name",
            "chainloom",
            "--data-dir",
            str(data),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            f"chainloom={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]
        log = run_dir / "logs" / "etcd.log"
        progress.step(f"starting etcd on 127.0.0.1:{client_port}")
        pid = spawn(argv, log)
        extra = {"url": client, "peer_port": str(peer_port)}
        running = Running(self.name, "", f"127.0.0.1:{client_port}", pid, str(log), extra=extra)
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=30)
        return Running(
            self.name, self.check(running), running.address, pid, str(log), extra=running.extra
        )

    def check(self, running: Running) -> str:
        url = running.extra["url"]
        with urllib.request.urlopen(f"{url}/health", timeout=3) as response:  # noqa: S310
            if json.loads(response.read()).get("health") != "true":
                raise RuntimeError("etcd reports itself unhealthy")
        with urllib.request.urlopen(f"{url}/version", timeout=3) as response:  # noqa: S310
            return "v" + str(json.loads(response.read())["etcdserver"])


class KubeApiserver:
    """kube-apiserver with client-certificate auth, RBAC and a generated kubeconfig."""

    name = "kube-apiserver"
    requires: tuple[str, ...] = ("etcd",)

    def install(self, progress: Progress) -> None:
        _build_kubernetes(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        home = run_dir / "kubernetes"
        pki = ensure_pki(home / "pki")
        port = choose_port(self.name, previous, "CHAINLOOM_APISERVER_PORT")
        server = f"https://127.0.0.1:{port}"
        kubeconfig = write_kubeconfig(home / "kubeconfig", pki, server)
        argv = [
            str(k8s_dir() / "bin" / "kube-apiserver"),
            f"--etcd-servers={deps['etcd'].extra['url']}",
            "--etcd-prefix=/chainloom",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={home / 'serving'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
        ]
        log = run_dir / "logs" / "kube-apiserver.log"
        progress.step(f"starting kube-apiserver {versions.KUBERNETES} on {server}")
        pid = spawn(argv, log)
        env = {"KUBECONFIG": str(kubeconfig)}
        extra = {"kubeconfig": str(kubeconfig), "pki": str(pki), "server": server}
        running = Running(self.name, "", f"127.0.0.1:{port}", pid, str(log), env=env, extra=extra)
        wait_until(
            self.name,
            lambda: _tls_get(f"{server}/readyz", pki) == b"ok",
            pid=pid,
            log=log,
            timeout=120,
            interval=0.5,
        )
        return Running(
            self.name, self.check(running), running.address, pid, str(log), env=env, extra=extra
        )

    def check(self, running: Running) -> str:
        kubeconfig = running.extra["kubeconfig"]
        version = json.loads(kubectl(kubeconfig, "version", "-o", "json"))
        kubectl(kubeconfig, "apply", "-f", "-", stdin=_HEALTH_CRD)
        deadline = time.monotonic() + 30
        while True:
            try:
                kubectl(kubeconfig, "apply", "-f", "-", stdin=_HEALTH_OBJECT)
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)  # the CRD's API takes a moment to be served
        read = json.loads(
            kubectl(
                kubeconfig,
                "get",
                "stackprobes.chainloom.dev",
                "probe",
                "-n",
                "default",
                "-o",
                "json",
            )
        )
        if read["spec"]["message"] != "hello":
            raise RuntimeError("the API server did not return the custom object written")
        return str(version["serverVersion"]["gitVersion"])


_HEALTH_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: stackprobes.chainloom.dev}
spec:
  group: chainloom.dev
  scope: Namespaced
  names: {plural: stackprobes, singular: stackprobe, kind: StackProbe}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {message: {type: string}}}
"""

_HEALTH_OBJECT = """apiVersion: chainloom.dev/v1
kind: StackProbe
metadata: {name: probe, namespace: default}
spec: {message: hello}
"""


class _ControlPlaneDaemon:
    """kube-controller-manager and kube-scheduler: same shape, different flags."""

    name = ""
    requires: tuple[str, ...] = ("kube-apiserver",)
    _extra_flags: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        _build_kubernetes(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        apiserver = deps["kube-apiserver"]
        kubeconfig, pki = apiserver.extra["kubeconfig"], Path(apiserver.extra["pki"])
        port = choose_port(self.name, previous)
        argv = [
            str(k8s_dir() / "bin" / self.name),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={run_dir / 'kubernetes' / self.name}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            *(flag.format(pki=pki) for flag in self._extra_flags),
        ]
        log = run_dir / "logs" / f"{self.name}.log"
        progress.step(f"starting {self.name}")
        pid = spawn(argv, log)
        binary = k8s_dir() / "bin" / self.name
        running = Running(self.name, _binary_version(binary), f"127.0.0.1:{port}", pid, str(log))
        wait_until(
            self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=60, interval=0.5
        )
        return running

    def check(self, running: Running) -> str:
        if _insecure_get(f"https://{running.address}/healthz") != b"ok":
            raise RuntimeError(f"{self.name} /healthz is not ok")
        return running.version


class KubeControllerManager(_ControlPlaneDaemon):
    """Runs the controllers (Deployments -> ReplicaSets -> Pods, namespaces, nodes)."""

    name = "kube-controller-manager"
    _extra_flags = (
        "--service-account-private-key-file={pki}/sa.key",
        "--root-ca-file={pki}/ca.crt",
        "--use-service-account-credentials=false",
        "--controllers=*,-serviceaccount-token",
    )


class KubeScheduler(_ControlPlaneDaemon):
    """Binds Pods to the simulated node."""

    name = "kube-scheduler"


class Kwok:
    """KWOK with chainloom's own stages and one simulated node."""

    name = "kwok"
    requires: tuple[str, ...] = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")

    def install(self, progress: Progress) -> None:
        if is_installed(kwok_dir()):
            return
        progress.step(f"building kwok {versions.KWOK} from the Go module proxy")
        _go_install(self.name, kwok_dir(), f"sigs.k8s.io/kwok/cmd/kwok@{versions.KWOK}", "-s -w")

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        kubeconfig = deps["kube-apiserver"].extra["kubeconfig"]
        port = choose_port(self.name, previous)
        binary = kwok_dir() / "bin" / "kwok"
        stages = [arg for stage in sorted(_STAGES.glob("*.yaml")) for arg in ("-c", str(stage))]
        argv = [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--manage-nodes-with-label-selector={KWOK_NODE_LABEL}",
            *stages,
            "--node-lease-duration-seconds=40",
            "--cidr=10.244.0.0/16",
            "--node-ip=10.244.0.1",
            f"--server-address=127.0.0.1:{port}",
        ]
        log = run_dir / "logs" / "kwok.log"
        progress.step(f"starting kwok and simulated node {NODE_NAME}")
        pid = spawn(argv, log)
        running = Running(
            self.name,
            module_version(binary),
            f"127.0.0.1:{port}",
            pid,
            str(log),
            extra={"kubeconfig": kubeconfig},
        )
        kubectl(kubeconfig, "apply", "-f", "-", stdin=_NODE)
        wait_until(
            self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=90, interval=0.5
        )
        return running

    def check(self, running: Running) -> str:
        node = json.loads(
            kubectl(running.extra["kubeconfig"], "get", "node", NODE_NAME, "-o", "json")
        )
        ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
        if not ready or ready[0]["status"] != "True":
            raise RuntimeError(f"node {NODE_NAME} is not Ready")
        return running.version


_NODE = f"""apiVersion: v1
kind: Node
metadata:
  name: {NODE_NAME}
  annotations: {{node.alpha.kubernetes.io/ttl: "0", kwok.x-k8s.io/node: fake}}
  labels: {{kubernetes.io/hostname: {NODE_NAME}, kubernetes.io/os: linux,
           kubernetes.io/arch: amd64, type: kwok}}
spec:
  taints: [{{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}}]
"""


def kubeconfig_path(state: dict[str, Running]) -> str | None:
    """The kubeconfig of a running API server, if any."""
    apiserver = state.get("kube-apiserver")
    return apiserver.extra.get("kubeconfig") if apiserver else None


__all__ = [
    "Etcd",
    "Helm",
    "KubeApiserver",
    "KubeControllerManager",
    "KubeScheduler",
    "Kubectl",
    "Kwok",
    "build_node_binaries",
    "kubeconfig_path",
]
