"""The SparkApplication (``sparkoperator.k8s.io/v1beta2``) that runs a job on Kubernetes.

A pure renderer: settings and the job's arguments in, the manifest as data out, so it is tested
as data and ``chainloom spark manifest`` only prints it (the operator's ``IngestPipeline``
renders through the same function). The application runs ``submit.py JOB ARGS`` from the
image, which holds chainloom[spark] and a Java runtime; the Spark configuration is the one a
local run gets (:func:`chainloom_spark.session.session_conf`) with the image's Python.

The pods' environment is ``envVars``, not ``env``: the spark-operator turns ``envVars`` into
``spark-submit``'s own ``spark.kubernetes.driverEnv.*`` / ``spark.executorEnv.*``, while ``env``
reaches the pods only through its mutating webhook, which a controller may run without (the
local stack's does).
"""

from __future__ import annotations

import json
from typing import Any

from chainloom.settings import CassandraSettings
from chainloom_spark.session import app_name, session_conf
from chainloom_spark.settings import SparkJobSettings

API_VERSION = "sparkoperator.k8s.io/v1beta2"
"""The Spark operator's API version."""

KIND = "SparkApplication"
"""The resource kind."""


CASSANDRA_ENV_FIELDS = (
    "replication_strategy",
    "datacenter_replication",
    "local_datacenter",
    "username",
    "password_file",
    "tls",
)
"""Cassandra settings without a job flag that travel as variables when they differ from their
defaults: names and paths only (the password stays in its file, mounted from a Secret with
``secrets.files``)."""


def environment(settings: SparkJobSettings) -> dict[str, str]:
    """The environment of driver and executors (``envVars``): the Bigtable location, app
    profile and key file (its path), the Cassandra login and TLS, then ``kubernetes.env``.

    Settings that have flags (the table, the keyspace) travel as arguments; the rest as the
    ``CHAINLOOM_...`` variables every chainloom process reads.
    """
    env: dict[str, str] = {}
    if settings.bigtable.project:
        env["CHAINLOOM_BIGTABLE__PROJECT"] = settings.bigtable.project
    if settings.bigtable.instance:
        env["CHAINLOOM_BIGTABLE__INSTANCE"] = settings.bigtable.instance
    if settings.bigtable.app_profile:
        env["CHAINLOOM_BIGTABLE__APP_PROFILE"] = settings.bigtable.app_profile
    if settings.bigtable.credentials_file:
        env["CHAINLOOM_BIGTABLE__CREDENTIALS_FILE"] = settings.bigtable.credentials_file
    if settings.database.type == "cassandra":
        env.update(cassandra_environment(settings.database.cassandra))
    env.update(settings.kubernetes.env)
    return env


def cassandra_environment(cassandra: CassandraSettings) -> dict[str, str]:
    """``CHAINLOOM_DATABASE__CASSANDRA__...`` for the fields of :data:`CASSANDRA_ENV_FIELDS`
    that are set (sections and maps as JSON, as the settings loader reads them)."""
    env: dict[str, str] = {}
    defaults = CassandraSettings()
    for field in CASSANDRA_ENV_FIELDS:
        value = getattr(cassandra, field)
        if value == getattr(defaults, field):
            continue
        name = f"CHAINLOOM_DATABASE__CASSANDRA__{field.upper()}"
        if isinstance(value, str):
            env[name] = value
        else:
            dumped = (
                value.model_dump(exclude_defaults=True) if hasattr(value, "model_dump") else value
            )
            env[name] = json.dumps(dumped, sort_keys=True)
    return env


def render_application(
    job: str, arguments: list[str], settings: SparkJobSettings, *, name: str | None = None
) -> dict[str, Any]:
    """The SparkApplication running ``job`` with ``arguments`` under ``settings``."""
    kube = settings.kubernetes
    spark_conf = session_conf(settings.spark, python=kube.python)
    spark_conf.pop("spark.ui.enabled")  # the operator manages the UI service
    env = dict(sorted(environment(settings).items()))
    labels = {
        "app.kubernetes.io/name": "chainloom",
        "app.kubernetes.io/component": "spark-job",
        "chainloom.io/job": job,
    }

    def pod() -> dict[str, Any]:  # fresh copies: a YAML dump would otherwise alias them
        return {"labels": dict(labels), **({"envVars": dict(env)} if env else {})}

    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name or app_name(settings.spark, job),
            "namespace": kube.namespace,
            "labels": dict(labels),
        },
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": kube.image,
            "imagePullPolicy": kube.image_pull_policy,
            "mainApplicationFile": kube.application_file,
            "arguments": [job, *arguments],
            "sparkVersion": kube.spark_version,
            "restartPolicy": {"type": "Never"},
            "sparkConf": spark_conf,
            "driver": {
                "cores": kube.driver_cores,
                "memory": kube.driver_memory,
                "serviceAccount": kube.service_account,
                **pod(),
            },
            "executor": {
                "instances": kube.executor_instances,
                "cores": kube.executor_cores,
                "memory": kube.executor_memory,
                **pod(),
            },
        },
    }


DRIVER_RESOURCES = ("pods", "services", "configmaps", "persistentvolumeclaims")
"""What a Spark driver on Kubernetes creates and watches in its namespace: its executor pods,
the headless Service they reach it through, its configuration maps and any volume claims."""

DRIVER_VERBS = ("create", "get", "list", "watch", "update", "patch", "delete", "deletecollection")
"""What it does with them."""


def render_driver_access(settings: SparkJobSettings) -> list[dict[str, Any]]:
    """The driver's ServiceAccount (``kubernetes.service_account``) with a Role and RoleBinding
    in ``kubernetes.namespace`` granting :data:`DRIVER_VERBS` on :data:`DRIVER_RESOURCES`:
    what a SparkApplication's driver needs to start and watch its executors."""
    kube = settings.kubernetes
    name, namespace = kube.service_account, kube.namespace
    labels = {"app.kubernetes.io/name": "chainloom", "app.kubernetes.io/component": "spark-driver"}

    def meta() -> dict[str, Any]:
        return {"name": name, "namespace": namespace, "labels": dict(labels)}

    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta()},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta(),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": list(DRIVER_RESOURCES),
                    "verbs": list(DRIVER_VERBS),
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta(),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]
