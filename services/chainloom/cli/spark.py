"""``chainloom spark``: run the Spark jobs here, or print the SparkApplication for Kubernetes.

``spark run JOB --master local[N] JOB_ARGS`` runs the job's ``main`` in this process with a
local master. That is what ``spark-submit`` would do for a local master anyway (it starts the
same JVM through the same launcher), minus a second Python start: the executors' Python
workers run this virtual environment's interpreter (``PYSPARK_PYTHON``), which already has
chainloom, so nothing is shipped. Any flag ``run`` does not know is the job's, so the stable
form ``chainloom spark run vaa-ingest --master local[2] --input P --table T`` needs no ``--``.

``spark manifest JOB JOB_ARGS`` prints the SparkApplication running the same job on a cluster,
from the same settings (``--config`` / ``$CHAINLOOM_SPARK_CONFIG``, ``CHAINLOOM_...``).
"""

from __future__ import annotations

import importlib.util
import sys

import click

from chainloom.cli.options import config_option, fail, load_or_exit
from chainloom_spark.jobs import JOBS

JOB_CHOICE = click.Choice(sorted(JOBS))
"""The job names (the registry imports no job, so listing them is cheap)."""

_PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": True}


@click.group()
def spark() -> None:
    """Run the Spark jobs locally, or print them as SparkApplications."""


@spark.command(context_settings=_PASS_THROUGH)
@click.argument("job", type=JOB_CHOICE)
@click.option("--master", help="Spark master, e.g. local[2] (spark.master; default local[*]).")
@click.argument("job_args", nargs=-1, type=click.UNPROCESSED)
def run(job: str, master: str | None, job_args: tuple[str, ...]) -> None:
    """Run JOB here (a local Spark driver); every other flag is the job's (docs/spark.md)."""
    from chainloom_spark.settings import check_master

    try:
        check_master(master or "")
    except ValueError as error:
        fail(f"--master: {error}")
    if importlib.util.find_spec("pyspark") is None:
        fail("pyspark is not installed: pip install 'chainloom[spark]'")
    from chainloom_spark.jobs import job_main

    argv = [*job_args, *(["--master", master] if master else [])]
    sys.exit(job_main(job)(argv))


@spark.command(context_settings=_PASS_THROUGH)
@config_option("CHAINLOOM_SPARK_CONFIG")
@click.option("--name", help="metadata.name (default: spark.app_name or chainloom-JOB).")
@click.option(
    "--with-access",
    is_flag=True,
    help="Also print the driver's ServiceAccount, Role and RoleBinding (before the application).",
)
@click.argument("job", type=JOB_CHOICE)
@click.argument("job_args", nargs=-1, type=click.UNPROCESSED)
def manifest(
    config_path: str | None,
    name: str | None,
    with_access: bool,
    job: str,
    job_args: tuple[str, ...],
) -> None:
    """Print the SparkApplication YAML that runs JOB with JOB_ARGS on Kubernetes."""
    import yaml

    from chainloom_spark.errors import JobArgumentError
    from chainloom_spark.jobs import check_arguments
    from chainloom_spark.manifest import render_application, render_driver_access
    from chainloom_spark.settings import SparkJobSettings

    settings = load_or_exit(SparkJobSettings, config_path, {})
    try:
        check_arguments(job, list(job_args))
    except JobArgumentError as error:
        fail(str(error))
    documents = render_driver_access(settings) if with_access else []
    documents.append(render_application(job, list(job_args), settings, name=name))
    click.echo(yaml.safe_dump_all(documents, sort_keys=False), nl=False)
