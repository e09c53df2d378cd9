"""Fuzzing on Spark: the embedded local[2], a real standalone cluster (master and
worker JVMs on 127.0.0.1, started with the installed pyspark's spark-class), and
spark-submit of the shipped package. Every run must give the same report as the
one-process run over the same seed range, apart from timings; the test-only mutant
is fuzzed too, so the executors must import what `--import` names."""

import io
import os
import subprocess
import sys

import pytest

from spark_harness import cluster, engines, fuzz, java, report, ship
from spark_harness.plan import make_plan

try:
    java.find_java_home()
except java.JavaMissing as e:  # make installs a JDK wheel; without one there is no Spark to test
    pytest.skip(str(e), allow_module_level=True)

# Every protocol and the mutant (named: `all` is the shipped six), kept small for CI: a few short histories each (at most
# 500 events: a few simulated seconds), no counterexamples, no report plots.
ARGS = dict(protocol="all,election_mutant", histories=4, steps=500, faults=["gentle", "standard", "hostile"],
            imports=("property_tests.protocol_mutants",), counterexamples=False, plots=False)


def fuzz_run(out, master, **extra):
    opts = fuzz.FuzzOptions(out=str(out), master=master, **(ARGS | extra))
    return fuzz.run(opts, log=io.StringIO())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    result = fuzz_run(tmp_path_factory.mktemp("none"), "none", progress=False)
    assert set(result.report["protocols"]) >= {"election", "election_mutant", "nameserver", "ha"}
    assert result.exit_code == 1  # the mutant fails ELE-2
    return report.deterministic_view(result.report)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A real standalone cluster (master and worker JVMs on 127.0.0.1), shared by the
    fuzz job run through it and the spark-submit to it."""
    with cluster.LocalCluster(cores=2, memory="1g", work_dir=str(tmp_path_factory.mktemp("cluster"))) as url:
        yield url


def test_embedded_local_spark_matches_one_process_and_writes_parquet(tmp_path, baseline, capsys):
    spark = engines.session("local[2]")  # open first: fuzz reuses it and leaves it open (one JVM start)
    try:
        result = fuzz_run(tmp_path, "local[2]")
        assert report.deterministic_view(result.report) == baseline
        assert result.report["master"] == "local[2]" and result.exit_code == 1
        assert "histories" in capsys.readouterr().err  # the progress bar
        df = spark.read.parquet(str(tmp_path / "histories.parquet"))
        assert df.count() == result.report["histories"] and tuple(df.columns) == engines.FIELDS
        mutant = df.filter("protocol = 'election_mutant' and unexpected > 0").count()
        assert mutant == ARGS["histories"]
        # Counterexamples are shrunk on the executors: the same result as on the driver.
        opts = fuzz.FuzzOptions(**ARGS)
        plan = make_plan(opts.protocol, opts.histories, opts.seed, opts.steps, opts.faults, opts.nodes, opts.imports)
        tasks = [t for t in fuzz.shrink_tasks(plan, result.aggregate, opts) if t[0] == "election_mutant"][:1]
        assert tasks
        on_executors = fuzz.shrink_on_spark(spark, tasks, plan.imports, (5000, 5000))
        on_driver = [fuzz._shrink_task(plan.imports, (5000, 5000), t) for t in tasks]
        assert on_executors == on_driver and on_driver[0][1] is not None
    finally:
        spark.stop()


@pytest.mark.slow  # the standalone cluster: master and worker JVMs (make test-all)
def test_standalone_cluster_runs_the_same_job(tmp_path, baseline, standalone):
    result = fuzz_run(tmp_path / "out", standalone, progress=False)
    assert result.report["master"] == standalone
    assert report.deterministic_view(result.report) == baseline
    assert os.path.exists(tmp_path / "out" / "_ship" / ship.ZIP_NAME)  # the package went to the executors


@pytest.mark.slow  # the standalone cluster: master and worker JVMs (make test-all)
def test_spark_submit_to_the_cluster_runs_the_shipped_package(tmp_path, baseline, standalone):
    zip_path = ship.build_zip(str(tmp_path / "dist"))
    env = os.environ | {"JAVA_HOME": java.find_java_home(), "PYSPARK_PYTHON": sys.executable,
                        "PYSPARK_DRIVER_PYTHON": sys.executable}
    argv = [cluster.spark_bin("spark-submit"), "--master", standalone, "--conf", "spark.driver.host=127.0.0.1",
            "--py-files", zip_path, ship.submit_script(),
            "--import", "property_tests.protocol_mutants", "--protocol", ARGS["protocol"], "--histories", str(ARGS["histories"]),
            "--steps", str(ARGS["steps"]), "--faults", "gentle,standard,hostile", "--no-counterexamples", "--no-progress",
            "--no-plots", "--out", str(tmp_path / "o")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-1500:] + done.stderr[-3000:]  # the mutant's unexpected violations
    import json

    with open(tmp_path / "o" / "report.json") as f:
        rep = json.load(f)
    assert rep["master"] == standalone
    assert report.deterministic_view(rep) == baseline
