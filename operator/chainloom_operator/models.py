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

from typing import Literal

from pydantic import Field

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
from chainloom.settings import (
    BigtableSettings,
    CassandraSettings,
    GuardianSetSettings,
    RedisSettings,
)
from chainloom.settings.emitters import ChainId, EmitterSettings
from chainloom.settings.parts import TlsSettings
from chainloom_operator.spark_models import (
    Attempt,
    BatchScheduler,
    DynamicAllocation,
    PipelineCondition,
    PriorityClassName,
    RestartPolicy,
    ScheduleStatus,
    Secrets,
    SparkPlacement,
    Volume,
)
from chainloom_operator.spec_parts import (
    API_VERSION,
    CEL_RULES,
    GROUP,
    VERSION,
    Affinity,
    Condition,
    DnsLabel,
    Placement,
    PodPlacement,
    Quantity,
    ResourceName,
    Resources,
    SecretKeyRef,
    Spec,
    Status,
    StatusPart,
    Toleration,
    cel,
    reused,
)
from chainloom_spark.settings import KubernetesSettings, SparkSettings, WriterSettings

__all__ = [  # the parts, re-exported: every model of the CRs is importable from here
    "API_VERSION",
    "CEL_RULES",
    "GROUP",
    "VERSION",
    "Affinity",
    "Condition",
    "DnsLabel",
    "Placement",
    "PodPlacement",
    "Quantity",
    "ResourceName",
    "Resources",
    "SecretKeyRef",
    "Spec",
    "Status",
    "StatusPart",
    "Toleration",
    "cel",
    "reused",
]

# --------------------------------------------------------------------------------------------
# RelayerPool


class RedisTlsRef(Spec):
    """TLS to the relay tables' Redis (a ``rediss://`` URL): files mounted from Secrets."""

    ca_ref: SecretKeyRef | None = Field(
        default=None,
        description="A Secret key holding the CA bundle (PEM) the server's certificate is "
        "checked against; null: the system's roots.",
    )
    client_secret: ResourceName | None = Field(
        default=None,
        description="A kubernetes.io/tls Secret (tls.crt, tls.key): the client certificate, for "
        "a server that asks for one.",
    )
    check_hostname: bool = reused(TlsSettings, "check_hostname")


class RedisAccess(Spec):
    """A Redis reached from the pods: a URL without a password, or a Secret holding the URL;
    an ACL user with its password in a Secret (mounted as a file); TLS files from Secrets."""

    url: str | None = Field(
        default=None,
        pattern=r"^rediss?://[^:@/]+(:[0-9]+)?(/[0-9]+)?$",
        description="redis:// or rediss:// URL without credentials (a URL with a password "
        "belongs in a Secret: use secret_ref).",
    )
    secret_ref: SecretKeyRef | None = Field(
        default=None, description="A Secret key holding the whole URL (passed as environment)."
    )
    username: str | None = reused(RelayRedisSettings, "username")
    password_ref: SecretKeyRef | None = Field(
        default=None,
        description="A Secret key holding the password of username (or of 'default'): mounted "
        "into the pods as a file, never an environment variable.",
    )
    tls: RedisTlsRef | None = Field(
        default=None, description="TLS files of a rediss:// URL; null: the system's roots."
    )

    def cel_checks(self) -> list[str]:
        if (self.url is None) == (self.secret_ref is None):
            return ["give exactly one of redis.url and redis.secret_ref"]
        return []


class RedisRef(RedisAccess):
    """The Redis of the relay tables (a :class:`RedisAccess` with the tables' key prefix)."""

    key_prefix: str = reused(RelayRedisSettings, "key_prefix")


class FeedRedisRef(RedisAccess):
    """The Redis whose pub/sub carries a BackendTable's feed (a :class:`RedisAccess` with the
    channels' prefix)."""

    key_prefix: str = Field(
        default=RedisSettings.model_fields["key_prefix"].default,
        min_length=1,
        description="Prefix of the channels: KEY_PREFIX:ledger:committed (Cassandra), "
        "KEY_PREFIX:eventstore:vaas (Bigtable).",
    )


ONE_URL = ("has(self.url) != has(self.secret_ref)",
           "give exactly one of redis.url and redis.secret_ref")  # fmt: skip
"""The CEL rule of every :class:`RedisAccess`."""
cel(RedisRef, ONE_URL)
cel(FeedRedisRef, ONE_URL)


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
    min_balance: str | None = Field(
        default=None,
        pattern=r"^[0-9]{1,78}$",
        description="Smallest balance a wallet of this chain should hold, in the chain's "
        "smallest unit (wei) as a decimal string; below it the pool gets the LowBalance "
        "condition and a Warning event (balances come from the workers through Redis).",
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


class PoolCondition(Condition):
    """A condition of a RelayerPool: Ready, Progressing, Degraded, and LowBalance (a wallet
    holds less than its chain's ``minBalance``)."""

    type: Literal["Ready", "Progressing", "Degraded", "LowBalance", "ReconciliationPaused"] = Field(
        description="Condition type."
    )  # type: ignore[assignment]


class RelayerPoolStatus(Status):
    """What the operator last saw of the pool."""

    conditions: tuple[PoolCondition, ...] = Field(
        default=(),
        description="Ready, Progressing, Degraded, LowBalance (and ReconciliationPaused).",
    )

    listener_ready_replicas: int = Field(default=0, description="Available listener pods.")
    workers: tuple[WorkerStatus, ...] = Field(default=(), description="Per {chain, wallet}.")
    ready_workers: str = Field(default="", description="Available/desired workers, e.g. 2/3.")
    queue_depths: dict[str, int] = Field(
        default_factory=dict,
        description="Requests waiting per table (incoming, in_work, ...) when Redis is reachable.",
    )


# --------------------------------------------------------------------------------------------
# IngestPipeline

MAX_ATTEMPTS = 20
"""Attempts an IngestPipeline's status keeps (the latest)."""
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
    restart_policy: RestartPolicy = Field(
        default_factory=RestartPolicy, description="When the application runs again."
    )
    time_to_live_seconds: int | None = Field(
        default=None,
        ge=1,
        description="Seconds the finished application is kept before the spark-operator "
        "deletes it (timeToLiveSeconds); null: kept. Its counts stay in the pipeline's status.",
    )
    dynamic_allocation: DynamicAllocation | None = Field(
        default=None, description="Executors added and removed with the work."
    )
    volumes: tuple[Volume, ...] = Field(
        default=(),
        max_length=32,
        description="Volumes of the driver and executors, with their mount paths.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    secrets: Secrets = Field(
        default_factory=Secrets, description="Credentials from Secrets (files or variables)."
    )
    driver_placement: SparkPlacement = Field(
        default_factory=SparkPlacement, description="Where the driver may run."
    )
    executor_placement: SparkPlacement = Field(
        default_factory=SparkPlacement, description="Where the executors may run."
    )
    priority_class_name: PriorityClassName | None = Field(
        default=None, description="PriorityClass of the driver and executor pods."
    )
    batch_scheduler: BatchScheduler | None = Field(
        default=None, description="A batch scheduler and its queue (gang scheduling)."
    )
    start_deadline_seconds: int | None = Field(
        default=None,
        ge=1,
        le=604800,
        description="Seconds a submitted application may wait for its driver to run before "
        "the pipeline reports SubmissionDelayed (a condition and a Warning event); null: "
        "no deadline.",
    )

    def cel_checks(self) -> list[str]:
        broken = []
        if self.input is None and self.job not in ("gap-backfill", "export"):
            broken.append("input is required for vaa-ingest, ledger-load and enrich")
        names = [v.name for v in self.volumes]
        if len(set(names)) != len(names):
            broken.append("volume names must be unique")
        variables = [e.name for e in self.secrets.env]
        if len(set(variables)) != len(variables) or set(variables) & set(self.resources.env):
            broken.append("a variable of secrets.env is given twice (or also in resources.env)")
        return broken


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


class SecretMount(Spec):
    """A Secret mounted read-only (mode 0440) into the pods: the files a secured store's
    settings name (``password_file``, ``tls.*``), as the chart's ``operator.secretMounts``."""

    secret: ResourceName = Field(description="Name of the Secret (same namespace).")
    mount_path: str = Field(
        min_length=2, pattern=r"^/", description="Directory the Secret's keys appear in."
    )


class LedgerFollowSpec(Spec):
    """The following ledger ETL: ``chainloom ledger follow`` replicas keeping the sink's
    Cassandra history current from rippled's gRPC API; one writes, the others stand by."""

    grpc: str = Field(
        min_length=3,
        pattern=r"^[^\s:]+:[0-9]{1,5}$",
        description="rippled's gRPC endpoint host:port ([port_grpc], usually 50051).",
    )
    start: int | None = Field(
        default=None, ge=1, description="First ledger of an empty keyspace; null: rippled's newest."
    )
    replicas: int = Field(default=2, ge=1, le=8, description="Pods: one writer, the rest standbys.")
    fallback_seconds: float = Field(
        default=10.0,
        ge=0.1,
        description="How long the ledger range may stall, with rippled ahead, before a standby "
        "takes over (Clio's fallback).",
    )
    poll_interval: float = Field(
        default=1.0, ge=0.01, description="Seconds between looks for a new ledger or the range."
    )
    image: str = Field(default="chainloom:latest", min_length=1, description="The chainloom image.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        default="IfNotPresent", description="imagePullPolicy of the pods."
    )
    secret_mounts: tuple[SecretMount, ...] = Field(
        default=(), description="Secrets holding the files the sink's cassandra settings name."
    )
    env: dict[str, str] = reused(KubernetesSettings, "env")
    resources: Resources = Field(default_factory=Resources, description="Per ETL pod.")
    placement: PodPlacement = Field(
        default_factory=PodPlacement,
        description="Node selector, tolerations and affinity of the pods.",
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
    ledger: LedgerFollowSpec | None = Field(
        default=None,
        description="The ledger ETL following rippled (mode streaming, a cassandra sink); "
        "instead of streaming.",
    )

    def cel_checks(self) -> list[str]:
        broken = []
        if self.ledger is not None and (self.mode != "streaming" or self.streaming is not None):
            broken.append("ledger is for mode streaming, instead of streaming")
        if self.schedule is not None and self.mode != "batch":
            broken.append("schedule is only for batch jobs")
        if (self.mode == "batch") != (self.batch is not None) or (self.mode == "streaming") != (
            self.streaming is not None or self.ledger is not None
        ):
            broken.append("give batch for mode batch, streaming for mode streaming (not both)")
        return broken


cel(
    IngestPipelineSpec,
    ("!has(self.schedule) || self.mode == 'batch'", "schedule is only for batch jobs"),
    ("(self.mode == 'batch') == has(self.batch) && (self.mode == 'streaming') == "
     "(has(self.streaming) || has(self.ledger))",
     "give batch for mode batch, streaming for mode streaming (not both)"),
    ("!has(self.ledger) || (self.mode == 'streaming' && !has(self.streaming))",
     "ledger is for mode streaming, instead of streaming"),
)  # fmt: skip


class IngestPipelineStatus(Status):
    """What the operator last saw of the pipeline's child."""

    conditions: tuple[PipelineCondition, ...] = Field(
        default=(),
        description="Ready, Progressing, Degraded, SubmissionDelayed (and ReconciliationPaused).",
    )

    application: str = Field(default="", description="Name of the rendered child.")
    writer: str = Field(
        default="",
        description="The ledger ETL's pod that writes (spec.ledger), as the pods report it.",
    )
    last_writer: str = Field(
        default="",
        description="The last pod seen writing alone (a takeover is a change of it).",
    )
    state: str = Field(
        default="",
        description="SUBMITTED, RUNNING, COMPLETED, FAILED, ... (the SparkApplication's state), "
        "SCHEDULED, or the indexer's Available/Progressing.",
    )
    last_run: str = Field(default="", description="The last run of a schedule.")
    summary: dict[str, int] = Field(
        default_factory=dict, description="The finished job's counts, when it reports them."
    )
    error_message: str = Field(
        default="", description="The application's error message (applicationState)."
    )
    submission_attempts: int = Field(
        default=0, description="The application's submissionAttempts (a schedule's last run's)."
    )
    execution_attempts: int = Field(
        default=0, description="The application's executionAttempts (a schedule's last run's)."
    )
    driver_pod: str = Field(default="", description="The driver pod (driverInfo.podName).")
    executor_state: dict[str, str] = Field(
        default_factory=dict, description="Executor pod -> its state (executorState)."
    )
    attempts: tuple[Attempt, ...] = Field(
        default=(),
        description="One entry per submission of the application (the latest "
        f"{MAX_ATTEMPTS}), each resubmission after a failure a new one.",
    )
    schedule: ScheduleStatus | None = Field(
        default=None, description="The ScheduledSparkApplication's status (scheduled pipelines)."
    )


# --------------------------------------------------------------------------------------------
# BackendTable


class ApiService(Spec):
    """The Service in front of the API's pods."""

    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = Field(
        default="ClusterIP", description="The Service's type."
    )
    port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="The Service's port; null: the API's own (4401 events, 51234 ledger).",
    )


class ApiSpec(Spec):
    """The read API over the tables: ``chainloom events api`` (bigtable) or ``chainloom ledger
    api`` (cassandra) as a Deployment, a Service and a PodDisruptionBudget."""

    image: str = Field(default="chainloom:latest", min_length=1, description="The chainloom image.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        default="IfNotPresent", description="imagePullPolicy of the pods."
    )
    replicas: int = Field(
        default=2, ge=0, le=64, description="API pods (kubectl scale btable/NAME works too)."
    )
    resources: Resources = Field(default_factory=Resources, description="Per API pod.")
    placement: PodPlacement = Field(
        default_factory=PodPlacement,
        description="Node selector, tolerations and affinity of the pods.",
    )
    service: ApiService = Field(default_factory=ApiService, description="The Service.")
    cursor_key: SecretKeyRef | None = Field(
        default=None,
        description="A Secret key holding the key that signs the events API's list cursors "
        "(api.cursor_key_file), so a cursor from one replica is taken by the others; null: a "
        "key per pod (a next page may be refused by another replica). Bigtable only.",
    )
    secret_mounts: tuple[SecretMount, ...] = Field(
        default=(),
        max_length=16,
        description="Secrets holding the files the table's cassandra settings name "
        "(password_file, tls.*), mounted read-only at those paths, as in the operator's pod.",
    )
    env: dict[str, str] = reused(KubernetesSettings, "env")


GCP_SERVICE_ACCOUNT = r"^[a-z][-a-z0-9]{4,28}[a-z0-9]@[-a-z0-9.]+\.iam\.gserviceaccount\.com$"
"""A Google service account's email."""


class GoogleAccess(Spec):
    """How the pods that open a Bigtable BackendTable's tables (its API, the indexer and the
    Spark jobs writing to it) authenticate to Google Cloud: Workload Identity (a Kubernetes
    ServiceAccount bound to a Google service account) or a service-account key from a Secret."""

    service_account: ResourceName | None = Field(
        default=None,
        description="Kubernetes ServiceAccount the pods run as (Workload Identity): an existing "
        "one, or with gcp_service_account the one the operator renders (null there: "
        "NAME-bigtable).",
    )
    gcp_service_account: str | None = Field(
        default=None,
        max_length=254,
        pattern=GCP_SERVICE_ACCOUNT,
        description="Google service account (email) to act as: the operator renders the "
        "ServiceAccount with the iam.gke.io/gcp-service-account annotation (the IAM binding "
        "roles/iam.workloadIdentityUser is granted on Google's side).",
    )
    key: SecretKeyRef | None = Field(
        default=None,
        description="A Secret key holding a service-account key (JSON), mounted read-only into "
        "the pods; bigtable.credentials_file and GOOGLE_APPLICATION_CREDENTIALS name the file.",
    )

    def cel_checks(self) -> list[str]:
        identity = self.service_account is not None or self.gcp_service_account is not None
        if (self.key is not None) == identity:
            return ["give key, or service_account and/or gcp_service_account (one way)"]
        return []


cel(
    GoogleAccess,
    ("has(self.key) != (has(self.service_account) || has(self.gcp_service_account))",
     "give key, or service_account and/or gcp_service_account (one way)"),
)  # fmt: skip


class BackendTableSpec(Spec):
    """The Bigtable events tables, or a Cassandra keyspace with Clio's tables; optionally the
    read API serving them."""

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
    api: ApiSpec | None = Field(
        default=None,
        description="The API serving the tables (events api or ledger api); null: none.",
    )
    feed: FeedRedisRef | None = Field(
        default=None,
        description="Redis pub/sub on which the table's writers (the ledger ETL, the streaming "
        "indexer) announce what they stored, so the API's subscriptions and streams hear of "
        "it at once; null: the API finds new data by polling the store.",
    )
    google: GoogleAccess | None = Field(
        default=None,
        description="Credentials of the pods that open the tables (backend bigtable); null: "
        "the pods' Application Default Credentials (or the emulator).",
    )

    def cel_checks(self) -> list[str]:
        broken = []
        if (self.backend == "bigtable") != (self.bigtable is not None) or (
            self.backend == "cassandra"
        ) != (self.cassandra is not None):
            broken.append("give bigtable for backend bigtable, cassandra for backend cassandra")
        if self.api is not None and self.api.cursor_key is not None and self.backend != "bigtable":
            broken.append("api.cursor_key is for backend bigtable (the events API) only")
        if self.google is not None and self.backend != "bigtable":
            broken.append("google is for backend bigtable only")
        return broken


cel(
    BackendTableSpec,
    ("(self.backend == 'bigtable') == has(self.bigtable) && (self.backend == 'cassandra') == "
     "has(self.cassandra)",
     "give bigtable for backend bigtable, cassandra for backend cassandra"),
    ("self.backend == oldSelf.backend", "backend is immutable"),
    ("!has(self.api) || !has(self.api.cursor_key) || self.backend == 'bigtable'",
     "api.cursor_key is for backend bigtable (the events API) only"),
    ("!has(self.google) || self.backend == 'bigtable'", "google is for backend bigtable only"),
)  # fmt: skip


class Drift(StatusPart):
    """One difference between the live schema and the one chainloom expects."""

    table: str = Field(description="Table (or keyspace).")
    item: str = Field(description="Column family, table or setting.")
    problem: str = Field(description="missing, gc_rule, unexpected, replication, ...")
    expected: str | None = Field(default=None, description="What chainloom expects.")
    actual: str | None = Field(default=None, description="What is there.")


class ApiStatus(StatusPart):
    """The API's Deployment as the operator last saw it (also the scale subresource's)."""

    deployment: str = Field(default="", description="The API's Deployment.")
    service: str = Field(default="", description="Its Service (same namespace).")
    replicas: int = Field(default=0, description="API pods that exist (the Deployment's).")
    ready_replicas: int = Field(default=0, description="API pods that pass their readiness.")
    selector: str = Field(default="", description="The label selector of the API's pods.")


class BackendTableStatus(Status):
    """What the operator last found in the database, and the API serving it."""

    tables: tuple[str, ...] = Field(default=(), description="The tables chainloom manages.")
    created: tuple[str, ...] = Field(
        default=(), description="Tables the operator created (the others existed already)."
    )
    drift: tuple[Drift, ...] = Field(
        default=(), description="Differences found (reported, never fixed destructively)."
    )
    last_checked: str = Field(default="", description="When the schema was last checked.")
    api_ready: str = Field(
        default="", description="Ready/desired API pods, e.g. 2/2 (empty without spec.api)."
    )
    api: ApiStatus | None = Field(default=None, description="The API (with spec.api).")


SPECS: dict[str, tuple[type[Spec], type[Status]]] = {
    "IngestPipeline": (IngestPipelineSpec, IngestPipelineStatus),
    "RelayerPool": (RelayerPoolSpec, RelayerPoolStatus),
    "BackendTable": (BackendTableSpec, BackendTableStatus),
}
"""Kind -> its spec and status models."""
