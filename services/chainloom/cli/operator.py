"""``chainloom operator``: run the Kubernetes operator, and write its CRDs.

``run`` starts the kopf operator against the current kubeconfig (development outside the
cluster; in a pod it uses the in-cluster service account). ``crds`` regenerates ``crds/`` and
the chart's copy from the spec models; ``--check`` only reports stale files (exit 1), as CI does.
The operator package and kopf are imported only when a subcommand runs.
"""

from __future__ import annotations

from pathlib import Path

import click

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
