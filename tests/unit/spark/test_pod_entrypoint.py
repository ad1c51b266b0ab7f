"""The chainloom-spark image's entry point: Spark's driver/executor contract rendered as data."""

from __future__ import annotations

import pytest

from chainloom_spark.pod_entrypoint import (
    EXECUTOR_BACKEND,
    EntrypointError,
    class_path,
    container_command,
    java_options,
    spark_home,
)

HOME = "/usr/local/lib/python3.11/dist-packages/pyspark"

EXECUTOR_ENV = {
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@ingest-driver-svc.t.svc:7078",
    "SPARK_EXECUTOR_ID": "2",
    "SPARK_EXECUTOR_CORES": "1",
    "SPARK_APPLICATION_ID": "spark-4f1c",
    "SPARK_EXECUTOR_POD_IP": "10.88.3.17",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_EXECUTOR_POD_NAME": "ingest-exec-2",
    "SPARK_EXECUTOR_MEMORY": "512m",
    "SPARK_CONF_DIR": "/opt/spark/conf",
    "JAVA_HOME": "/usr/lib/jvm/java-17-openjdk-amd64",
}


def test_the_driver_runs_spark_submit_in_client_mode_bound_to_the_pod_ip():
    arguments = ["driver", "--properties-file", "/opt/spark/conf/spark.properties",
                 "--class", "org.apache.spark.deploy.PythonRunner",
                 "local:///opt/chainloom/spark-apps/chainloom_spark/submit.py",
                 "vaa-ingest", "--input", "/input/vaas.txt"]  # fmt: skip
    command = container_command(arguments, {"SPARK_DRIVER_BIND_ADDRESS": "10.88.3.9"}, HOME)
    assert command == [
        f"{HOME}/bin/spark-submit",
        "--conf", "spark.driver.bindAddress=10.88.3.9",
        "--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.88.3.9",
        "--deploy-mode", "client",
        *arguments[1:],
    ]  # fmt: skip


def test_the_executor_runs_the_kubernetes_backend_with_its_environment():
    env = {**EXECUTOR_ENV, "SPARK_JAVA_OPT_10": "-Dk=10", "SPARK_JAVA_OPT_2": "-Dk=2",
           "SPARK_JAVA_OPT_0": "-Dk=0"}  # fmt: skip
    command = container_command(["executor"], env, HOME, working_dir="/work")
    backend = command.index(EXECUTOR_BACKEND)
    assert command[:backend] == [
        "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
        "-Dk=0", "-Dk=2", "-Dk=10",  # by number, not by name
        "-Xms512m", "-Xmx512m",
        "-cp", f"/opt/spark/conf:{HOME}/jars/*:/work",
    ]  # fmt: skip
    flags = dict(zip(command[backend + 1 :: 2], command[backend + 2 :: 2], strict=True))
    assert flags == {
        "--driver-url": EXECUTOR_ENV["SPARK_DRIVER_URL"],
        "--executor-id": "2",
        "--cores": "1",
        "--app-id": "spark-4f1c",
        "--hostname": "10.88.3.17",
        "--resourceProfileId": "0",
        "--podName": "ingest-exec-2",
    }


def test_the_default_resource_profile_and_java_on_the_path():
    env = {k: v for k, v in EXECUTOR_ENV.items()
           if k not in ("SPARK_RESOURCE_PROFILE_ID", "JAVA_HOME")}  # fmt: skip
    command = container_command(["executor"], env, HOME)
    assert command[0] == "java"
    assert command[command.index("--resourceProfileId") + 1] == "0"


@pytest.mark.parametrize(
    ("argv", "missing"),
    [(["driver", "--class", "X"], "SPARK_DRIVER_BIND_ADDRESS"),
     (["executor"], "SPARK_DRIVER_URL"), (["executor"], "SPARK_EXECUTOR_MEMORY")],
)  # fmt: skip
def test_a_missing_variable_is_named(argv: list[str], missing: str):
    env = {} if argv[0] == "driver" else {k: v for k, v in EXECUTOR_ENV.items() if k != missing}
    with pytest.raises(EntrypointError, match=missing):
        container_command(argv, env, HOME)


def test_anything_else_is_a_chainloom_command():
    assert container_command(["spark", "run", "vaa-ingest"], {}, HOME) == [
        "chainloom", "spark", "run", "vaa-ingest",
    ]  # fmt: skip
    assert container_command([], {}, HOME) == ["chainloom"]
    assert container_command(["--version"], {}, HOME) == ["chainloom", "--version"]


def test_class_path_takes_hadoop_extra_and_distribution_entries_in_order():
    env = {"HADOOP_CONF_DIR": "/etc/hadoop", "SPARK_EXTRA_CLASSPATH": "/x.jar",
           "SPARK_DIST_CLASSPATH": "/hadoop/*", "SPARK_CLASSPATH": "/extra.jar"}  # fmt: skip
    assert class_path(env, HOME, "/w") == (
        f"{HOME}/conf:/etc/hadoop:/extra.jar:{HOME}/jars/*:/x.jar:/hadoop/*:/w"
    )
    assert java_options({"SPARK_JAVA_OPT_x": "-no", "OTHER": "-no"}) == []


def test_spark_home_is_the_setting_or_the_pyspark_distribution():
    assert spark_home({"SPARK_HOME": "/opt/spark"}) == "/opt/spark"
    pytest.importorskip("pyspark")
    found = spark_home({})
    assert found.endswith("pyspark")
    assert __import__("pathlib").Path(found, "bin", "spark-submit").exists()
