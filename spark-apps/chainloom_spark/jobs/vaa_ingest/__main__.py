"""``python -m chainloom_spark.jobs.vaa_ingest ARGS``: the job's main, imported by its module
name, so tasks reference functions by module and each worker keeps one signature cache."""

import sys

from chainloom_spark.jobs.vaa_ingest.driver import main

sys.exit(main(sys.argv[1:]))
