"""The ``chainloom-spark`` image's entry point: Spark's Kubernetes contract, then ``chainloom``.

Spark's Kubernetes backend starts the driver and executor containers with the image's own entry
point and the arguments ``driver ARGS`` or ``executor``, passing what they need in ``SPARK_*``
environment variables (Spark's "Running on Kubernetes" documentation). The image is chainloom's,
so every other command line is handed to ``chainloom``, as in the plain image:

- ``driver ARGS``: ``spark-submit --deploy-mode client`` with ``ARGS`` (the properties file, the
  main class, the application and its arguments, as the submission wrote them), the driver
  bound to the pod's IP (``SPARK_DRIVER_BIND_ADDRESS``), which executors are also told.
- ``executor``: the JVM of ``KubernetesExecutorBackend`` with the ``SPARK_EXECUTOR_*``
  settings, the ``SPARK_JAVA_OPT_<n>`` options in order and Spark's jars on the class path.
- anything else: ``chainloom ARGS``.

:func:`container_command` is pure (arguments and environment in, the command out); :func:`main`
only replaces the process with it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

EXECUTOR_BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
"""The executor's main class on Kubernetes."""

DRIVER_BIND_ADDRESS = "SPARK_DRIVER_BIND_ADDRESS"
"""Set by Spark on the driver container from the pod's IP."""

EXECUTOR_FLAGS = (
    ("--driver-url", "SPARK_DRIVER_URL"),
    ("--executor-id", "SPARK_EXECUTOR_ID"),
    ("--cores", "SPARK_EXECUTOR_CORES"),
    ("--app-id", "SPARK_APPLICATION_ID"),
    ("--hostname", "SPARK_EXECUTOR_POD_IP"),
    ("--resourceProfileId", "SPARK_RESOURCE_PROFILE_ID"),
    ("--podName", "SPARK_EXECUTOR_POD_NAME"),
)
"""The executor backend's flags and the variables Spark sets on the executor container."""

EXECUTOR_MEMORY = "SPARK_EXECUTOR_MEMORY"
"""The executor JVM's heap (``-Xms`` and ``-Xmx``), Spark's syntax (``1024m``)."""

_JAVA_OPTION = re.compile(r"SPARK_JAVA_OPT_(\d+)")


class EntrypointError(Exception):
    """The container was started without what its command needs (names the variable)."""


def _required(env: Mapping[str, str], name: str, role: str) -> str:
    value = env.get(name, "")
    if not value:
        raise EntrypointError(
            f"the Spark {role} container needs {name} (set by Spark's Kubernetes backend)"
        )
    return value


def java_options(env: Mapping[str, str]) -> list[str]:
    """The ``SPARK_JAVA_OPT_<n>`` values, in the order of ``n``."""
    numbered = [
        (int(found.group(1)), value)
        for name, value in env.items()
        if (found := _JAVA_OPTION.fullmatch(name))
    ]
    return [value for _, value in sorted(numbered)]


def class_path(env: Mapping[str, str], spark_home: str, working_dir: str) -> str:
    """The executor's class path: the Spark configuration directory (Hadoop's, if set),
    ``SPARK_CLASSPATH`` (Spark sets it from ``spark.executor.extraClassPath``), Spark's jars,
    any extra and distribution class path, and the working directory."""
    entries = [
        env.get("SPARK_CONF_DIR") or f"{spark_home}/conf",
        env.get("HADOOP_CONF_DIR", ""),
        env.get("SPARK_CLASSPATH", ""),
        f"{spark_home}/jars/*",
        env.get("SPARK_EXTRA_CLASSPATH", ""),
        env.get("SPARK_DIST_CLASSPATH", ""),
        working_dir,
    ]
    return ":".join(entry for entry in entries if entry)


def driver_command(arguments: Sequence[str], env: Mapping[str, str], spark_home: str) -> list[str]:
    """``spark-submit`` in client mode inside the driver pod, bound to the pod's IP."""
    address = _required(env, DRIVER_BIND_ADDRESS, "driver")
    return [
        f"{spark_home}/bin/spark-submit",
        "--conf",
        f"spark.driver.bindAddress={address}",
        "--conf",
        f"spark.executorEnv.SPARK_DRIVER_POD_IP={address}",
        "--deploy-mode",
        "client",
        *arguments,
    ]


def executor_command(env: Mapping[str, str], spark_home: str, working_dir: str) -> list[str]:
    """The executor JVM: heap from ``SPARK_EXECUTOR_MEMORY``, flags from the environment."""
    memory = _required(env, EXECUTOR_MEMORY, "executor")
    java_home = env.get("JAVA_HOME")
    command = [
        f"{java_home}/bin/java" if java_home else "java",
        *java_options(env),
        f"-Xms{memory}",
        f"-Xmx{memory}",
        "-cp",
        class_path(env, spark_home, working_dir),
        EXECUTOR_BACKEND,
    ]
    for flag, name in EXECUTOR_FLAGS:
        if name == "SPARK_RESOURCE_PROFILE_ID":
            value = env.get(name) or "0"  # the default profile
        else:
            value = _required(env, name, "executor")
        command += [flag, value]
    return command


def container_command(
    argv: Sequence[str], env: Mapping[str, str], spark_home: str, working_dir: str = "/"
) -> list[str]:
    """What the container runs for ``argv`` (its arguments) in ``env``."""
    if argv[:1] == ["driver"]:
        return driver_command(argv[1:], env, spark_home)
    if argv[:1] == ["executor"]:
        return executor_command(env, spark_home, working_dir)
    return ["chainloom", *argv]


def spark_home(env: Mapping[str, str]) -> str:
    """``SPARK_HOME``, else the installed pyspark package (a whole Spark distribution: its
    ``bin/spark-submit`` and ``jars``), found without importing it."""
    configured = env.get("SPARK_HOME")
    if configured:
        return configured
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return "/opt/spark"
    return str(Path(next(iter(spec.submodule_search_locations))))


def main() -> None:
    """Replace this process with the container's command (exit 2 naming a missing variable)."""
    arguments = sys.argv[1:]
    try:
        home = "" if arguments[:1] not in (["driver"], ["executor"]) else spark_home(os.environ)
        command = container_command(arguments, os.environ, home, os.getcwd())
    except EntrypointError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    if home:
        os.environ.setdefault("SPARK_HOME", home)  # the JVMs find Spark's Python files there
    sys.stdout.flush()
    os.execvp(command[0], command)  # noqa: S606 - the container's one process


if __name__ == "__main__":
    main()
