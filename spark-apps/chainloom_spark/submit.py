"""The application file ``spark-submit`` (and a SparkApplication) runs: ``submit.py JOB ARGS``.

Kept to a dispatch on purpose: a file run as a script is ``__main__``, and functions defined
there would be shipped to executors by value. The jobs live in importable modules
(:mod:`chainloom_spark.jobs`), so tasks reference them by name and each worker imports them
once.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Run job ``argv[0]`` with the rest of ``argv``; its exit code (2 for an unknown job)."""
    from chainloom_spark.jobs import JOBS, job_main

    if not argv or argv[0] not in JOBS:
        print(f"error: usage: submit.py JOB [ARGS...]; jobs: {', '.join(JOBS)}", file=sys.stderr)
        return 2
    return job_main(argv[0])(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
