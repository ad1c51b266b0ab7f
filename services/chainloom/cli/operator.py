"""``chainloom operator``: run the Kubernetes operator, and write its CRDs.

``run`` starts the kopf operator against the current kubeconfig (development outside the
cluster; in a pod it uses the in-cluster service account). ``crds`` regenerates ``crds/`` and
the chart's copy from the spec models; ``--check`` only reports stale files (exit 1), as CI does.
The operator package and kopf are imported only when a subcommand runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from chainloom.cli.options import config_option, fail, load_or_exit

DEFAULT_CRD_DIRS = ("crds", "charts/chainloom/crds")
"""Where the generated CRDs live, relative to the repository root."""


@click.group()
def operator() -> None:
    """The Kubernetes operator (IngestPipeline, RelayerPool, BackendTable)."""


@operator.command()
@click.option(
    "--out",
    "directories",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write (repeatable; default: crds/ and charts/chainloom/crds/).",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file is stale.")
def crds(directories: tuple[Path, ...], check: bool) -> None:
    """Generate the CRDs from the spec models."""
    from chainloom_operator import crds as generator

    targets = directories or tuple(Path(d) for d in DEFAULT_CRD_DIRS)
    stale_found = False
    for directory in targets:
        if check:
            stale = generator.stale_files(directory) if directory.is_dir() else ["(missing)"]
            for name in stale:
                click.echo(f"stale: {directory / name}")
            stale_found = stale_found or bool(stale)
        else:
            for name in generator.write(directory):
                click.echo(f"wrote {directory / name}")
    if stale_found:
        raise SystemExit(1)


@operator.command()
@config_option("CHAINLOOM_OPERATOR_CONFIG")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: $KUBECONFIG.")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Watch this namespace (repeatable; default: the whole cluster).",
)
@click.option("--peering", help="ClusterKopfPeering shared by the replicas (peering).")
@click.option("--priority", type=int, help="This replica's peering priority (priority).")
@click.option("--liveness", help="Liveness endpoint URL, e.g. http://0.0.0.0:8080/healthz.")
@click.option("--metrics", help="host:port of the Prometheus /metrics endpoint (metrics).")
@click.option("--otlp-endpoint",
              help="OTLP/HTTP collector the rendered pods export to (otlp_endpoint).")  # fmt: skip
@click.option("--recheck-interval", type=float,
              help="Seconds between BackendTable schema checks (recheck_interval).")  # fmt: skip
def run(kubeconfig: str | None, namespaces: tuple[str, ...], **options: Any) -> None:
    """Run the operator against the current kubeconfig until SIGINT or SIGTERM."""
    from chainloom.telemetry import configure_logging
    from chainloom.telemetry import setup as setup_telemetry
    from chainloom_operator.config import OperatorSettings
    from chainloom_operator.runner import run as run_operator
    from chainloom_operator.runner import start_metrics

    flags = {
        "namespaces": list(namespaces) or None,
        "peering": options["peering"],
        "priority": options["priority"],
        "liveness": options["liveness"],
        "metrics": options["metrics"],
        "otlp_endpoint": options["otlp_endpoint"],
        "recheck_interval": options["recheck_interval"],
    }
    settings = load_or_exit(OperatorSettings, options["config_path"], flags)
    configure_logging(settings.telemetry.log_format)
    if kubeconfig is not None:
        _check_kubeconfig(Path(kubeconfig))
    observed = setup_telemetry("chainloom-operator")  # OTEL_* decides; off by default
    try:
        try:
            metrics = start_metrics(settings, observed)
        except OSError as error:
            fail(f"metrics: cannot listen on {settings.metrics}: {error.strerror or error}")
        run_operator(settings, kubeconfig, metrics)
    finally:
        observed.shutdown()


def _check_kubeconfig(path: Path) -> None:
    """Refuse a kubeconfig that cannot be read as one, before kopf starts (exit 2)."""
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        fail(f"--kubeconfig {path}: {error.strerror or error}")
    except (UnicodeDecodeError, yaml.YAMLError):
        fail(f"--kubeconfig {path}: not a kubeconfig (YAML) file")
    if not isinstance(document, dict) or "clusters" not in document:
        fail(f"--kubeconfig {path}: not a kubeconfig (no clusters)")
