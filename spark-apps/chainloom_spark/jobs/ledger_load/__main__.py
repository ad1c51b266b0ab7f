"""``python -m chainloom_spark.jobs.ledger_load ARGS``: the job's main, imported by its module
name, so tasks reference functions by module."""

import sys

from chainloom_spark.jobs.ledger_load.driver import main

sys.exit(main(sys.argv[1:]))
