"""Loading a settings model from its four sources, in one fixed precedence.

    defaults  <  YAML file  <  environment (CHAINLOOM_..., nested with __)  <  CLI flags

Each layer is read into a nested mapping, the mappings are merged key by key (a higher layer
replaces a leaf, never a whole section), and the result is validated once. Validation errors
are reported as one line naming the source of the offending value (the file, the environment
variable or the command line), the dotted field path and what was wrong.

Service models derive from :class:`ServiceSettings` (a pydantic-settings ``BaseSettings``, so
the environment is parsed by pydantic-settings itself: JSON for lists and sections, ``__`` for
nesting). Constructing a model directly (``RelayerSettings(...)``) uses defaults and the
arguments only; :func:`load_settings` is the one place the sources are combined.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings import (
    SettingsError as SourceError,
)

from chainloom.settings.errors import SettingsError
from chainloom.settings.parts import TelemetrySettings

ENV_PREFIX = "CHAINLOOM_"
"""Prefix of every environment variable that sets a field."""
ENV_NULL = "null"
"""An environment value that sets a field to null (CHAINLOOM_SPY_ADDRESS=null)."""
_FIELD_NAME = re.compile(r"[a-z_][a-z0-9_]*")
ENV_NESTED_DELIMITER = "__"
"""Separator of nested field names in environment variables (CHAINLOOM_REDIS__URL)."""


class ServiceSettings(BaseSettings):
    """Base of a service's settings model (frozen, unknown keys refused)."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
    )

    config_file_env: ClassVar[str] = ""
    """Environment variable naming the service's YAML file when no --config is given."""

    telemetry: TelemetrySettings = Field(
        default_factory=TelemetrySettings,
        description="Logs beside the OTEL_* variables (docs/observability.md).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Direct construction sees its arguments only; :func:`load_settings` adds the rest."""
        return (init_settings,)


S = TypeVar("S", bound=ServiceSettings)


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML (or JSON) settings file as a mapping (safe loader: data only, never code)."""
    try:
        text = path.read_text()
    except OSError as error:
        raise SettingsError(f"{path}: cannot read: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise SettingsError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the top level must be a mapping")
    return data


def read_environment(model: type[S]) -> dict[str, Any]:
    """The ``CHAINLOOM_*`` variables of the process that name fields of ``model``, nested.

    Variables naming no field of ``model`` are left alone (they may be another service's:
    one shell or pod environment often carries several); an unknown key *inside* a section
    (``CHAINLOOM_REDIS__URLL``) is refused at validation like an unknown key of a file.
    """
    source = EnvSettingsSource(
        model,
        case_sensitive=False,
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        env_parse_none_str=ENV_NULL,
    )
    try:
        return dict(source())
    except SourceError as error:
        # pydantic-settings names the top-level field; name the variables that set it.
        found = re.search(r'field "(\w+)"', str(error))
        stem = ENV_PREFIX + (found.group(1).upper() if found else "")
        names = sorted(n for n in os.environ if n.upper().startswith(stem)) or [stem]
        raise SettingsError(
            f"environment {', '.join(names)}: not valid JSON (lists and sections are JSON, "
            'e.g. \'["a", "b"]\')'
        ) from None


def flags_to_mapping(flags: Mapping[str, Any]) -> dict[str, Any]:
    """``{"rest.port": 5}`` as ``{"rest": {"port": 5}}``; None means "flag not given"."""
    nested: dict[str, Any] = {}
    for dotted, value in flags.items():
        if value is None:
            continue
        *sections, leaf = dotted.split(".")
        target = nested
        for section in sections:
            target = target.setdefault(section, {})
        target[leaf] = value
    return nested


def merge(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> dict[str, Any]:
    """``higher`` over ``lower``, section by section (leaves and lists are replaced whole)."""
    merged = dict(lower)
    for key, value in higher.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = merge(below, value)
        else:
            merged[key] = value
    return merged


def config_file_of(model: type[ServiceSettings], config_file: str | Path | None,
                   environ: Mapping[str, str]) -> Path | None:  # fmt: skip
    """The file to read: ``--config``, else the model's ``CHAINLOOM_<SERVICE>_CONFIG``."""
    chosen = config_file or (environ.get(model.config_file_env) if model.config_file_env else None)
    return Path(chosen) if chosen else None


def load_settings(
    model: type[S],
    *,
    config_file: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
) -> S:
    """``model`` from defaults < ``config_file`` < the environment < ``flags``.

    ``flags`` maps dotted field paths to values (None: not given). Raises :class:`SettingsError`
    with one line naming the source, the field and the problem.
    """
    path = config_file_of(model, config_file, os.environ)
    from_file = read_yaml(path) if path is not None else {}
    from_env = read_environment(model)
    from_flags = flags_to_mapping(flags or {})
    merged = merge(merge(from_file, from_env), from_flags)
    try:
        return model.model_validate(merged)
    except ValidationError as error:
        layers = _Layers(path, from_file, from_env, from_flags)
        raise SettingsError(describe(error, layers)) from None


class _Layers:
    """The three layers' raw mappings, to say which one a bad value came from."""

    def __init__(self, path: Path | None, from_file: Mapping[str, Any],
                 from_env: Mapping[str, Any], from_flags: Mapping[str, Any]) -> None:  # fmt: skip
        self.path = path
        self.from_file = from_file
        self.from_env = from_env
        self.from_flags = from_flags

    def source_of(self, location: tuple[int | str, ...]) -> str:
        if _has(self.from_flags, location):
            return "command line"
        if _has(self.from_env, location):
            for depth in range(len(location), 0, -1):
                if all(isinstance(p, str) for p in location[:depth]) and _has(
                    self.from_env, location[:depth]
                ):
                    name = ENV_NESTED_DELIMITER.join(str(p) for p in location[:depth]).upper()
                    return f"environment {ENV_PREFIX}{name}"
        if self.path is not None and _has(self.from_file, location):
            return str(self.path)
        return "defaults" if self.path is None else f"{self.path} (with defaults)"


def _has(data: Any, location: tuple[int | str, ...]) -> bool:
    """Whether ``data`` holds something at ``location`` (or at a prefix that replaces it)."""
    if not location:
        return True
    head, *rest = location
    if isinstance(data, Mapping) and isinstance(head, str) and head in data:
        value = data[head]
        return not rest or not isinstance(value, Mapping | list) or _has(value, tuple(rest))
    return isinstance(data, list) and isinstance(head, int) and 0 <= head < len(data)


def _field_path(location: tuple[int | str, ...]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


def describe(error: ValidationError, layers: _Layers) -> str:
    """Every problem of ``error`` on one line: ``source: field.path: what was wrong``."""
    return "; ".join(
        f"{layers.source_of(location)}: {_field_path(location)}: {what}"
        for location, what in _problems(error)
    )


def describe_validation_error(error: ValidationError, root: str = "") -> str:
    """Every problem of ``error`` on one line, fields named from ``root`` (no source known)."""
    prefix = tuple(root.split(".")) if root else ()
    return "; ".join(
        f"{_field_path(prefix + location)}: {what}" for location, what in _problems(error)
    )


def _problems(error: ValidationError) -> list[tuple[tuple[int | str, ...], str]]:
    """``(field location, what was wrong)`` of every problem in ``error``."""
    problems = []
    for item in error.errors(include_url=False):
        raw = item["loc"]
        # Union branches and validators add steps such as "literal['*']" or "EmitterSettings"
        # to the location; field names are lower-case identifiers (an unknown key is kept).
        location = tuple(
            part
            for index, part in enumerate(raw)
            if isinstance(part, int)
            or _FIELD_NAME.fullmatch(part)
            or (index == len(raw) - 1 and item["type"] == "extra_forbidden")
        )
        if item["type"] == "extra_forbidden":
            what = "unknown key"
        else:
            what = item["msg"]
            # A validator's own message says what it got, masked where it is a secret.
            if (
                "input" in item
                and item["type"] != "value_error"
                and not isinstance(item["input"], Mapping | list)
            ):
                what += f" (got {item['input']!r})"
        problems.append((location, what))
    return problems
