"""vaa-ingest on the node with one executor and with two: the scale-out ratio, in one run.

The same input (``chainloom-dev vaa generate``, dev guardian set 0, each message once) is ingested
by SparkApplications that the stack's spark-operator runs on the real node (``chainloom-dev stack
up --node``), with 1 and then 2 executor pods of one core each (CPU request 250m, no limit),
alternating for ``--rounds`` rounds into fresh tables; the best round of each counts. A run is
timed by the job itself (its last progress line in the driver's log: from the start of the
first pass to the end of the second), with
``spark.scheduler.minRegisteredResourcesRatio=1``, so every executor has registered before the
job starts: the pods' and JVMs' start-up is left out of both rates (printed apart, as the
application's submission to completion). Printed: VAA/s at each width, the ratio (goal >= 1.7)
and the machine's load average, whose 2 cores also run the control plane, the emulator and
this process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _generate(count: int, seed: int) -> list[str]:
    chainloom = str(Path(sys.executable).with_name("chainloom"))
    return subprocess.run(
        [chainloom, "vaa", "generate", "--count", str(count), "--seed", str(seed),
         "--mix", "duplicate=0,conflict=0"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip


PROGRESS = re.compile(r"vaa-ingest: read (\d+), .* records/s \(([\d.]+) s\)")
"""The job's progress line; its last one closes the job (docs/spark.md, "Progress lines")."""


def _run(cluster: Any, job: Any, executors: int, table: str) -> dict[str, Any]:
    from dataclasses import replace

    from tests.cluster.spark_support import apply, termination_summary, wait_for_state
    from tests.operator_support import kubectl

    sized = replace(job, executors=executors)
    name = f"bench-{executors}x-{uuid.uuid4().hex[:6]}"
    application = sized.application(name, table)
    application["spec"]["sparkConf"]["spark.scheduler.minRegisteredResourcesRatio"] = "1"
    started = time.monotonic()
    apply(cluster.kubeconfig, [application])
    wait_for_state(cluster.kubeconfig, job.namespace, name, ["COMPLETED"], timeout=1800)
    wall = time.monotonic() - started
    driver = f"{name}-driver"
    summary = termination_summary(cluster.kubeconfig, job.namespace, driver)
    log = kubectl(cluster.kubeconfig, "-n", job.namespace, "logs", driver).stdout
    last = PROGRESS.findall(log)[-1]
    seconds = float(last[1])
    return {"executors": executors, "job_seconds": seconds, "vaas": summary["read"],
            "new": summary["new"], "submitted_to_completed_seconds": round(wall, 1),
            "vaas_per_second": summary["read"] / seconds}  # fmt: skip


def main() -> None:
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=6000, help="VAAs per run")
    parser.add_argument("--rounds", type=int, default=1, help="alternating runs; best counts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()

    from chainloom.eventstore.bigtable import drop_tables
    from chainloom.settings import BigtableSettings
    from chainloom_dev.stack import manager
    from chainloom_dev.stack._paths import run_dir
    from tests.cluster.node_support import host_relay, node_gateway
    from tests.cluster.spark_support import (
        NodeJob,
        apply,
        ensure_spark_operator,
        import_spark_image,
        input_directory,
        label_namespace,
    )
    from tests.conftest import NodeCluster

    state = manager.load_state()
    if "kubelet" not in state or not manager.status(["kubelet"])[0].healthy:
        print("spark_node: skipped: no node is up (sudo chainloom-dev stack up --node)")
        return
    cluster = NodeCluster(run_dir(), state)
    emulator = state["bigtable"].address
    os.environ["BIGTABLE_EMULATOR_HOST"] = emulator
    image = import_spark_image(cluster)
    ensure_spark_operator(cluster)

    lines = _generate(options.count, options.seed)
    directory = input_directory(lines)
    namespace = f"bench-spark-{uuid.uuid4().hex[:6]}"
    cluster.kubectl_run("create", "namespace", namespace)
    label_namespace(cluster.kubeconfig, namespace)
    load_before = os.getloadavg()[0]
    runs: list[dict[str, Any]] = []
    tables: list[str] = []
    try:
        with host_relay(node_gateway(cluster), emulator) as relay:
            job = NodeJob(namespace, relay, directory, image=image, partitions=8)
            apply(cluster.kubeconfig, job.access())
            for _ in range(options.rounds):
                for executors in (1, 2):
                    tables.append(f"bn-{uuid.uuid4().hex[:8]}")
                    runs.append(_run(cluster, job, executors, tables[-1]))
                    print(json.dumps(runs[-1]))
    finally:
        cluster.kubectl_run("delete", "namespace", namespace, "--wait=false")
        shutil.rmtree(directory, ignore_errors=True)
        for table in tables:
            drop_tables(BigtableSettings(project="chainloom", instance="local", table=table))
    best = {n: max(r["vaas_per_second"] for r in runs if r["executors"] == n) for n in (1, 2)}
    result = {
        "vaas": options.count,
        "rounds": options.rounds,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "runs": runs,
        "vaas_per_second": best,
        "ratio": best[2] / best[1],
    }
    print(f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before, "
          f"{result['load_after']:.1f} after; best of {options.rounds} round(s)")  # fmt: skip
    print(f"vaa-ingest on the node, {options.count} VAAs: 1 executor {best[1]:.0f} VAA/s, "
          f"2 executors {best[2]:.0f} VAA/s: {result['ratio']:.2f}x (goal >= 1.7x)")  # fmt: skip
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written: {options.json}")


if __name__ == "__main__":
    sys.path[:0] = [str(REPO), str(REPO / "services"), str(REPO / "spark-apps")]
    main()
