"""Driver script for spark-submit: `spark-submit [--master URL] --py-files rmqspec-exec.zip
rmqspec/spark_submit.py FUZZ-ARGS...` runs `rmqspec fuzz FUZZ-ARGS` on the master spark-submit
was given (docs/fuzzing.md). Build the zip with `python -m spark_harness.ship DIR`."""

import sys

from rmqspec import cli

if __name__ == "__main__":
    sys.exit(cli.main(["fuzz", "--master", "submitted", *sys.argv[1:]]))
