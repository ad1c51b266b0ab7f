"""``chainloom config``: the settings models' JSON Schema and a service's effective settings.

``schema`` prints what the operator's CRD ``spec`` schemas are generated from; ``show`` prints
what a service would run with after every layer (defaults < file < environment), secrets
redacted, so a deployment can be checked before it starts.
"""

from __future__ import annotations

import json

import click

from chainloom.cli.options import fail, load_or_exit
from chainloom.settings.registry import SERVICES


@click.group()
def config() -> None:
    """Settings: JSON Schema of the models and the effective settings of a service."""


@config.command()
@click.argument("model")
def schema(model: str) -> None:
    """Print the JSON Schema of MODEL (relayer, eventstore, ledger, or a part: redis, ...)."""
    from chainloom.settings import SettingsError
    from chainloom.settings.registry import model_named

    try:
        chosen = model_named(model)
    except SettingsError as error:
        fail(str(error))
    click.echo(json.dumps(chosen.model_json_schema(), indent=2, sort_keys=True))


@config.command()
@click.option("--service", required=True, type=click.Choice(sorted(SERVICES)), help="The service.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="YAML/JSON settings file (default: the service's $CHAINLOOM_<SERVICE>_CONFIG).",
)
@click.option(
    "--format", "output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
def show(service: str, config_path: str | None, output: str) -> None:
    """Print the effective settings of SERVICE (file < environment < defaults), secrets hidden."""
    import yaml

    from chainloom.settings import ServiceSettings, SettingsError
    from chainloom.settings.registry import model_named

    try:
        model = model_named(service, services_only=True)
    except SettingsError as error:
        fail(str(error))
    assert issubclass(model, ServiceSettings)
    settings = load_or_exit(model, config_path, {})
    data = settings.model_dump(mode="json")
    if output == "json":
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=True), nl=False)
