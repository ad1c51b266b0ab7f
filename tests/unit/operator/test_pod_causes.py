"""Why a pod cannot start, from its status as the kubelet and the scheduler write it (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom_operator._render.pod_causes import PodCause, start_failure


def _pod(
    phase: str = "Pending",
    *,
    waiting: dict[str, str] | None = None,
    scheduled: dict[str, str] | None = None,
    init: bool = False,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if scheduled is not None:
        status["conditions"] = [{"type": "PodScheduled", **scheduled}]
    if waiting is not None:
        container = {"name": "spark-kubernetes-driver", "image": "chainloom-spark:nope",
                     "state": {"waiting": waiting}}  # fmt: skip
        status["initContainerStatuses" if init else "containerStatuses"] = [container]
    return {"metadata": {"name": "p-driver"}, "status": status}


@pytest.mark.parametrize(
    ("pod", "reason", "words"),
    [
        (_pod(waiting={"reason": "ErrImagePull", "message": "pull access denied"}),
         "ImagePullFailed", ["p-driver", "chainloom-spark:nope", "ErrImagePull",
                             "pull access denied"]),
        (_pod(waiting={"reason": "ImagePullBackOff", "message": "Back-off pulling image"}),
         "ImagePullFailed", ["ImagePullBackOff", "Back-off pulling image"]),
        (_pod(waiting={"reason": "ErrImageNeverPull"}, init=True),
         "ImagePullFailed", ["ErrImageNeverPull"]),
        (_pod(scheduled={"status": "False", "reason": "Unschedulable",
                         "message": "0/1 nodes are available: 1 Insufficient cpu."}),
         "Unschedulable", ["p-driver cannot be scheduled", "Insufficient cpu"]),
        (_pod(waiting={"reason": "CreateContainerConfigError",
                       "message": 'secret "cassandra" not found'}),
         "MissingSecret", ['secret "cassandra" not found']),
        (_pod(waiting={"reason": "CreateContainerConfigError",
                       "message": "couldn't find key password in Secret data/cassandra"}),
         "MissingSecret", ["couldn't find key password"]),
        (_pod(waiting={"reason": "CreateContainerConfigError",
                       "message": 'configmap "spark-conf" not found'}),
         "MissingConfigMap", ["spark-conf"]),
        (_pod(waiting={"reason": "CreateContainerConfigError", "message": "odd"}),
         "ContainerConfigError", ["odd"]),
        (_pod(waiting={"reason": "RunContainerError", "message": "exec: no such file"}),
         "ContainerStartFailed", ["no such file"]),
    ],
)  # fmt: skip
def test_a_pod_that_cannot_start_says_why(pod: dict[str, Any], reason: str, words: list[str]
                                          ) -> None:  # fmt: skip
    cause = start_failure(pod)
    assert isinstance(cause, PodCause)
    assert cause.reason == reason
    for word in words:
        assert word in cause.message


@pytest.mark.parametrize(
    "pod",
    [
        None,
        {},
        _pod(),  # just created
        _pod(waiting={"reason": "ContainerCreating"}),  # pulling, mounting: only slow
        _pod(scheduled={"status": "False", "reason": "SchedulingGated"}),
        _pod(scheduled={"status": "True"}),
        _pod("Running"),
        _pod("Failed", waiting={"reason": "ErrImagePull"}),  # it ended: the state says so
        _pod("Succeeded"),
    ],
)
def test_a_pod_that_is_only_slow_or_runs_has_no_cause(pod: dict[str, Any] | None) -> None:
    assert start_failure(pod) is None


def test_scheduling_comes_before_the_containers() -> None:
    unschedulable = {"status": "False", "reason": "Unschedulable", "message": "m"}
    pod = _pod(waiting={"reason": "ErrImagePull"}, scheduled=unschedulable)
    cause = start_failure(pod)
    assert cause is not None
    assert cause.reason == "Unschedulable"
