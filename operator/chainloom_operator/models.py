"""The specs and statuses of the three custom resources, built from the services' settings.

One source of truth: a CR field that configures a service is *that service's* settings field.
Whole settings parts are embedded where the CR configures the whole part (``BackendTable``'s
``bigtable`` is :class:`~chainloom.settings.BigtableSettings`, a ``RelayerPool``'s ``worker`` is
:class:`~chainloom.relayer.config.RelayerWorkerSettings`); where a CR takes only some fields of
a service model, :func:`reused` copies the field itself (type constraints, default and
description) from the service model, and a unit test checks the copies still match. The CRD
schemas (:mod:`chainloom_operator.crds`) are generated from these models, so the settings file,
``chainloom config schema`` and ``kubectl explain`` describe a field with the same words.

Field names are the settings' snake_case names, not Kubernetes' usual camelCase: a section of a
CR reads exactly like the same section of a service's YAML file, so it can be copied between
them. What the schema alone cannot say (one of two fields, a rule across fields) is declared
with each model as CEL rules (:data:`CEL_RULES`), which the generator puts into the CRDs and
which the models check too, so the API server and the operator refuse the same specs.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from chainloom.eventstore.config import EventStoreSettings
from chainloom.indexer.config import BatchSettings as IndexerBatchSettings
from chainloom.indexer.config import IndexerSettings, IndexerSpySettings
from chainloom.relayer.config import (
    RelayerSettings,
    RelayerWorkerSettings,
    RelayRedisSettings,
    RestSettings,
    TokenRule,
)
from chainloom.settings import BigtableSettings, CassandraSettings, GuardianSetSettings
from chainloom.settings.emitters import ChainId, EmitterSettings
from chainloom.settings.parts import Part
from chainloom_spark.settings import KubernetesSettings, SparkSettings, WriterSettings

GROUP = "chainloom.io"
"""API group of the custom resources."""
VERSION = "v1alpha1"
"""Their one served and stored version."""
API_VERSION = f"{GROUP}/{VERSION}"
"""``apiVersion`` of every custom resource."""

DnsLabel = Annotated[
    str, Field(min_length=1, max_length=30, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]
"""A short DNS label (it becomes part of child object names)."""
ResourceName = Annotated[
    str, Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$")
]
"""The name of another object in the same namespace (a Secret, a BackendTable)."""
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")]
"""A Kubernetes resource quantity (``250m``, ``128Mi``)."""


def reused(model: type[BaseModel], name: str) -> Any:
    """Field ``name`` of a service's settings ``model``, to declare again in a spec model.

    The copy keeps the field's constraints, default and description; the spec model repeats
    only the annotation (for the type checker), which ``tests/unit/operator/test_models.py``
    compares with the original.
    """
    return copy.deepcopy(model.model_fields[name])


class Spec(Part):
    """Base of every spec model: frozen, unknown keys refused (as in the settings models)."""

    def cel_checks(self) -> list[str]:
        """Messages of the CEL rules this object breaks (checked here as the server does)."""
        return []

    @model_validator(mode="after")
    def _cel_rules(self) -> Spec:
        broken = self.cel_checks()
        if broken:
            raise ValueError("; ".join(broken))
        return self


CEL_RULES: dict[type[BaseModel], list[dict[str, str]]] = {}
"""CEL ``x-kubernetes-validations`` per model, mirrored by the model's :meth:`Spec.cel_checks`."""


def cel(model_type: type[Spec], *rules: tuple[str, str]) -> None:
    """Declare ``(rule, message)`` CEL rules of ``model_type``."""
    CEL_RULES[model_type] = [{"rule": rule, "message": message} for rule, message in rules]


# --------------------------------------------------------------------------------------------
# Shared


class SecretKeyRef(Spec):
    """One key of a Secret in the resource's namespace."""

    name: ResourceName = Field(description="Name of the Secret.")
    key: str = Field(
        default="key",
        min_length=1,
        max_length=253,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="Key inside the Secret.",
    )


class Resources(Spec):
    """CPU and memory of a container (requests; the limit is the memory request)."""

    cpu: Quantity = Field(default="100m", description="CPU request.")
    memory: Quantity = Field(default="128Mi", description="Memory request and limit.")


class Toleration(Spec):
    """A taint the pods tolerate (Kubernetes' ``Toleration``, the fields a placement needs)."""

    key: str = Field(default="", max_length=253, description="Taint key; empty matches every key.")
    operator: Literal["Exists", "Equal"] = Field(
        default="Equal", description="Exists (any value) or Equal (the value below)."
    )
    value: str = Field(default="", max_length=63, description="Taint value, for Equal.")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="", description="Taint effect; empty matches every effect."
    )


class Placement(Spec):
    """Where the pods may run: copied into every pod template the resource renders."""

    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels a node must carry (nodeSelector)."
    )
    tolerations: tuple[Toleration, ...] = Field(
        default=(), description="Taints the pods tolerate (e.g. dedicated nodes)."
    )


class StatusPart(BaseModel):
    """Base of the status models: camelCase on the wire, as Kubernetes tools read status.

    ``kubectl wait --for=condition=Ready`` and kstatus-based tools (Helm, Flux, Argo CD) look
    for ``status.observedGeneration`` and ``status.conditions``; the spec keeps the settings'
    names (see the module docstring), the status follows the Kubernetes convention.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel,
                              populate_by_name=True)  # fmt: skip


class Condition(StatusPart):
    """One condition of a resource's status (the Kubernetes ``metav1.Condition`` fields)."""

    type: Literal["Ready", "Progressing", "Degraded"] = Field(description="Condition type.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="One CamelCase word for the state.")
    message: str = Field(default="", description="What is going on, for a person.")
    observed_generation: int = Field(
        default=0, description="metadata.generation of the spec this condition describes."
    )
    last_transition_time: str = Field(
        default="", description="When status last changed (RFC 3339)."
    )


class Status(StatusPart):
    """Fields every status has."""

    observed_generation: int = Field(
        default=0, description="metadata.generation of the spec last reconciled."
    )
    conditions: tuple[Condition, ...] = Field(
        default=(), description="Ready, Progressing and Degraded."
    )


# --------------------------------------------------------------------------------------------
# RelayerPool


class RedisRef(Spec):
    """The Redis of the relay tables: a URL without a password, or a Secret holding the URL."""

    url: str | None = Field(
        default=None,
        pattern=r"^rediss?://[^:@/]+(:[0-9]+)?(/[0-9]+)?$",
        description="redis:// or rediss:// URL without credentials (a URL with a password "
        "belongs in a Secret: use secret_ref).",
    )
    secret_ref: SecretKeyRef | None = Field(
        default=None, description="A Secret key holding the whole URL (passed as environment)."
    )
    key_prefix: str = reused(RelayRedisSettings, "key_prefix")

    def cel_checks(self) -> list[str]:
        if (self.url is None) == (self.secret_ref is None):
            return ["give exactly one of redis.url and redis.secret_ref"]
        return []


cel(
    RedisRef,
    ("has(self.url) != has(self.secret_ref)", "give exactly one of redis.url and redis.secret_ref"),
)


class RelayValidation(Spec):
    """What the listener accepts: the relayer's validation settings."""

    guardian_sets: GuardianSetSettings = reused(RelayerSettings, "guardian_sets")
    known_emitters: tuple[Literal["mainnet", "devnet"] | EmitterSettings, ...] = reused(
        RelayerSettings, "known_emitters"
    )
    tokens: tuple[TokenRule, ...] = reused(RelayerSettings, "tokens")
    payload3: bool = reused(RelayerSettings, "payload3")


class ListenerRest(Spec):
    """The listener's REST endpoint (it binds every interface of the pod)."""

    enabled: bool = reused(RestSettings, "enabled")
    port: int = Field(default=4201, ge=1, le=65535, description="TCP port (container and Service).")
    max_request_bytes: int = reused(RestSettings, "max_request_bytes")
    header_timeout: float = reused(RestSettings, "header_timeout")
    body_timeout: float = reused(RestSettings, "body_timeout")


class ListenerSpec(Spec):
    """The listener Deployment."""

    replicas: int = Field(default=1, ge=0, le=16, description="Listener pods.")
    rest: ListenerRest = Field(default_factory=ListenerRest, description="The REST endpoint.")
    spy_buffer: int = reused(RelayerSettings, "spy_buffer")
    spy_overflow: Literal["block", "drop"] = reused(RelayerSettings, "spy_overflow")
    intake_threads: int = reused(RelayerSettings, "intake_threads")
    redeem_check: Literal["none", "redis-sim"] = reused(RelayerSettings, "redeem_check")
    resources: Resources = Field(default_factory=Resources, description="Per listener pod.")


class WalletSpec(Spec):
    """One wallet of a target chain: a worker Deployment of its own, its key in a Secret."""

    name: DnsLabel = Field(description="Short name, part of the worker Deployment's name.")
    secret_ref: SecretKeyRef = Field(
        description="The Secret key holding the wallet key (hex); mounted as a file, never "
        "passed as environment."
    )


class ChainSpec(Spec):
    """One target chain the pool redeems on."""

    chain: ChainId = Field(description="The chain (Wormhole id or name).")
    rpc_endpoint: str | None = Field(
        default=None, description="RPC URL of the chain's node (null: the simulated chain)."
    )
    confirmations: int = Field(
        default=1, ge=0, le=1024, description="Blocks a redemption waits for before it is final."
    )
    contracts: dict[str, str] = Field(
        default_factory=dict,
        description="Contract addresses on the chain by role (token_bridge, core, ...).",
    )
    wallets: tuple[WalletSpec, ...] = Field(
        max_length=16,
        description="The wallets (one worker each, so two workers never share a wallet); "
        "names are unique within the chain.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )

    def cel_checks(self) -> list[str]:
        broken = [] if self.wallets else ["every chain needs at least one wallet"]
        names = [w.name for w in self.wallets]
        if len(set(names)) != len(names):
            broken.append("wallet names must be unique within a chain")
        return broken


cel(ChainSpec, ("size(self.wallets) >= 1", "every chain needs at least one wallet"))


class RelayerPoolSpec(Spec):
    """A relayer: its listener, and one worker per {target chain, wallet}."""

    image: str = Field(default="chainloom:latest", min_length=1, description="The chainloom image.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        default="IfNotPresent", description="imagePullPolicy of every pod."
    )
    spy_address: str | None = reused(RelayerSettings, "spy_address")
    redis: RedisRef = Field(description="Redis holding the relay tables.")
    validation: RelayValidation = Field(
        default_factory=RelayValidation, description="What the listener accepts."
    )
    listener: ListenerSpec = Field(default_factory=ListenerSpec, description="The listener.")
    worker: RelayerWorkerSettings = reused(RelayerSettings, "worker")
    worker_resources: Resources = Field(default_factory=Resources, description="Per worker pod.")
    placement: Placement = Field(
        default_factory=Placement, description="Node selector and tolerations of every pod."
    )
    chains: tuple[ChainSpec, ...] = Field(
        min_length=1, max_length=32, description="The target chains."
    )

    def cel_checks(self) -> list[str]:
        ids = [c.chain for c in self.chains]
        return [] if len(set(ids)) == len(ids) else ["a chain may be listed only once"]


class WorkerStatus(StatusPart):
    """Readiness of one worker Deployment."""

    chain: int = Field(description="The target chain's id.")
    wallet: str = Field(description="The wallet's name.")
    ready: bool = Field(description="The worker's pod is available.")


class RelayerPoolStatus(Status):
    """What the operator last saw of the pool."""

    listener_ready_replicas: int = Field(default=0, description="Available listener pods.")
    workers: tuple[WorkerStatus, ...] = Field(default=(), description="Per {chain, wallet}.")
    ready_workers: str = Field(default="", description="Available/desired workers, e.g. 2/3.")
    queue_depths: dict[str, int] = Field(
        default_factory=dict,
        description="Requests waiting per table (incoming, in_work, ...) when Redis is reachable.",
    )


# --------------------------------------------------------------------------------------------
# IngestPipeline

BatchJob = Literal["vaa-ingest", "ledger-load", "gap-backfill", "enrich", "export"]
"""The Spark jobs (``chainloom_spark.jobs.JOBS``; a unit test keeps the two equal)."""


class SparkResources(Spec):
    """The SparkApplication's image and sizes (the fields of ``chainloom spark manifest``)."""

    image: str = reused(KubernetesSettings, "image")
    image_pull_policy: str = reused(KubernetesSettings, "image_pull_policy")
    service_account: str = reused(KubernetesSettings, "service_account")
    spark_version: str = reused(KubernetesSettings, "spark_version")
    driver_cores: int = reused(KubernetesSettings, "driver_cores")
    driver_memory: str = reused(KubernetesSettings, "driver_memory")
    executor_instances: int = reused(KubernetesSettings, "executor_instances")
    executor_cores: int = reused(KubernetesSettings, "executor_cores")
    executor_memory: str = reused(KubernetesSettings, "executor_memory")
    env: dict[str, str] = reused(KubernetesSettings, "env")


class BatchSpec(Spec):
    """A Spark job run by the spark-operator."""

    def cel_checks(self) -> list[str]:
        if self.input is None and self.job not in ("gap-backfill", "export"):
            return ["input is required for vaa-ingest, ledger-load and enrich"]
        return []

    job: BatchJob = Field(description="The job (chainloom spark run JOB).")
    input: str | None = Field(
        default=None,
        min_length=1,
        description="What the job reads: --input of vaa-ingest and ledger-load and --prices of "
        "enrich (required there), --files of gap-backfill (else give --public-api in "
        "arguments); export takes its --output in arguments.",
    )
    arguments: tuple[str, ...] = Field(
        default=(), description="Further flags of the job, appended after the rendered ones."
    )
    spark: SparkSettings = Field(default_factory=SparkSettings, description="The SparkSession.")
    writer: WriterSettings = Field(
        default_factory=WriterSettings, description="Per-partition writes to the event store."
    )
    guardian_sets: GuardianSetSettings = reused(EventStoreSettings, "guardian_sets")
    resources: SparkResources = Field(
        default_factory=SparkResources, description="Image, driver and executors."
    )


class StreamingSpec(Spec):
    """The streaming indexer: a Deployment following a spy into the event store."""

    image: str = Field(default="chainloom:latest", min_length=1, description="The chainloom image.")
    replicas: int = Field(default=1, ge=0, le=16, description="Indexer pods.")
    spy: IndexerSpySettings = reused(IndexerSettings, "spy")
    guardian_sets: GuardianSetSettings = reused(IndexerSettings, "guardian_sets")
    buffer: int = reused(IndexerSettings, "buffer")
    batch: IndexerBatchSettings = reused(IndexerSettings, "batch")
    dedupe_window: int = reused(IndexerSettings, "dedupe_window")
    drain_timeout: float = reused(IndexerSettings, "drain_timeout")
    env: dict[str, str] = reused(KubernetesSettings, "env")
    resources: Resources = Field(default_factory=Resources, description="Per indexer pod.")
    placement: Placement = Field(
        default_factory=Placement, description="Node selector and tolerations of the pods."
    )


cel(
    BatchSpec,
    ("self.job == 'gap-backfill' || self.job == 'export' || has(self.input)",
     "input is required for vaa-ingest, ledger-load and enrich"),
)  # fmt: skip


class IngestPipelineSpec(Spec):
    """A Spark batch job (optionally on a schedule) or a streaming indexer, into a BackendTable."""

    mode: Literal["batch", "streaming"] = Field(description="batch (Spark) or streaming (indexer).")
    sink: ResourceName = Field(description="Name of the BackendTable written to (same namespace).")
    schedule: str | None = Field(
        default=None,
        min_length=1,
        description="Cron schedule of a batch job (a ScheduledSparkApplication); null: run once.",
    )
    suspend: bool = Field(default=False, description="Pause the schedule or the indexer.")
    batch: BatchSpec | None = Field(default=None, description="The Spark job (mode batch).")
    streaming: StreamingSpec | None = Field(
        default=None, description="The indexer (mode streaming)."
    )

    def cel_checks(self) -> list[str]:
        broken = []
        if self.schedule is not None and self.mode != "batch":
            broken.append("schedule is only for batch jobs")
        if (self.mode == "batch") != (self.batch is not None) or (self.mode == "streaming") != (
            self.streaming is not None
        ):
            broken.append("give batch for mode batch, streaming for mode streaming (not both)")
        return broken


cel(
    IngestPipelineSpec,
    ("!has(self.schedule) || self.mode == 'batch'", "schedule is only for batch jobs"),
    ("(self.mode == 'batch') == has(self.batch) && (self.mode == 'streaming') == "
     "has(self.streaming)",
     "give batch for mode batch, streaming for mode streaming (not both)"),
)  # fmt: skip


class IngestPipelineStatus(Status):
    """What the operator last saw of the pipeline's child."""

    application: str = Field(default="", description="Name of the rendered child.")
    state: str = Field(
        default="",
        description="SUBMITTED, RUNNING, COMPLETED, FAILED, ... (the SparkApplication's state), "
        "SCHEDULED, or the indexer's Available/Progressing.",
    )
    last_run: str = Field(default="", description="The last run of a schedule.")
    summary: dict[str, int] = Field(
        default_factory=dict, description="The finished job's counts, when it reports them."
    )


# --------------------------------------------------------------------------------------------
# BackendTable


class BackendTableSpec(Spec):
    """The Bigtable events tables, or a Cassandra keyspace with Clio's tables."""

    backend: Literal["bigtable", "cassandra"] = Field(description="Which database.")
    bigtable: BigtableSettings | None = Field(
        default=None, description="The events and index tables (backend bigtable)."
    )
    cassandra: CassandraSettings | None = Field(
        default=None, description="The keyspace and its tables (backend cassandra)."
    )
    deletion_policy: Literal["Retain", "Delete"] = Field(
        default="Retain",
        description="On deleting the resource, keep the tables (Retain) or drop them (Delete: "
        "a finalizer holds the resource until they are gone).",
    )

    def cel_checks(self) -> list[str]:
        if (self.backend == "bigtable") != (self.bigtable is not None) or (
            self.backend == "cassandra"
        ) != (self.cassandra is not None):
            return ["give bigtable for backend bigtable, cassandra for backend cassandra"]
        return []


cel(
    BackendTableSpec,
    ("(self.backend == 'bigtable') == has(self.bigtable) && (self.backend == 'cassandra') == "
     "has(self.cassandra)",
     "give bigtable for backend bigtable, cassandra for backend cassandra"),
    ("self.backend == oldSelf.backend", "backend is immutable"),
)  # fmt: skip


class Drift(StatusPart):
    """One difference between the live schema and the one chainloom expects."""

    table: str = Field(description="Table (or keyspace).")
    item: str = Field(description="Column family, table or setting.")
    problem: str = Field(description="missing, gc_rule, unexpected, replication, ...")
    expected: str | None = Field(default=None, description="What chainloom expects.")
    actual: str | None = Field(default=None, description="What is there.")


class BackendTableStatus(Status):
    """What the operator last found in the database."""

    tables: tuple[str, ...] = Field(default=(), description="The tables chainloom manages.")
    created: tuple[str, ...] = Field(
        default=(), description="Tables the operator created (the others existed already)."
    )
    drift: tuple[Drift, ...] = Field(
        default=(), description="Differences found (reported, never fixed destructively)."
    )
    last_checked: str = Field(default="", description="When the schema was last checked.")


SPECS: dict[str, tuple[type[Spec], type[Status]]] = {
    "IngestPipeline": (IngestPipelineSpec, IngestPipelineStatus),
    "RelayerPool": (RelayerPoolSpec, RelayerPoolStatus),
    "BackendTable": (BackendTableSpec, BackendTableStatus),
}
"""Kind -> its spec and status models."""
