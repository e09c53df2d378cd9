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

from rmqspec import java
from spark_harness import cluster, engines, fuzz, report, ship

try:
    java.find_java_home()
except java.JavaMissing as e:  # make installs a JDK wheel; without one there is no Spark to test
    pytest.skip(str(e), allow_module_level=True)

ARGS = dict(protocol="all", histories=6, faults=["gentle", "standard", "hostile"], imports=("property_tests.protocol_mutants",),
            counterexamples=False)


def fuzz_run(out, master, **extra):
    opts = fuzz.FuzzOptions(out=str(out), master=master, **(ARGS | extra))
    return fuzz.run(opts, log=io.StringIO())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    result = fuzz_run(tmp_path_factory.mktemp("none"), "none", progress=False)
    assert set(result.report["protocols"]) >= {"election", "election_mutant"}
    assert result.exit_code == 1  # the mutant fails ELE-2
    return report.deterministic_view(result.report)


def test_embedded_local_spark_matches_one_process_and_writes_parquet(tmp_path, baseline, capsys):
    result = fuzz_run(tmp_path, "local[2]")
    assert report.deterministic_view(result.report) == baseline
    assert result.report["master"] == "local[2]" and result.exit_code == 1
    assert "histories" in capsys.readouterr().err  # the progress bar
    spark = engines.session("local[2]")
    try:
        df = spark.read.parquet(str(tmp_path / "histories.parquet"))
        assert df.count() == result.report["histories"] and tuple(df.columns) == engines.FIELDS
        mutant = df.filter("protocol = 'election_mutant' and unexpected > 0").count()
        assert mutant == ARGS["histories"]
    finally:
        spark.stop()


def test_standalone_cluster_runs_the_same_job(tmp_path, baseline):
    with cluster.LocalCluster(cores=2, memory="1g", work_dir=str(tmp_path / "cluster")) as url:
        result = fuzz_run(tmp_path / "out", url, progress=False)
    assert result.report["master"] == url
    assert report.deterministic_view(result.report) == baseline
    assert os.path.exists(tmp_path / "out" / "_ship" / ship.ZIP_NAME)  # the package went to the executors


def test_spark_submit_runs_the_shipped_package(tmp_path, baseline):
    zip_path = ship.build_zip(str(tmp_path / "dist"))
    env = os.environ | {"JAVA_HOME": java.find_java_home(), "PYSPARK_PYTHON": sys.executable,
                        "PYSPARK_DRIVER_PYTHON": sys.executable}
    argv = [cluster.spark_bin("spark-submit"), "--master", "local[2]", "--py-files", zip_path, ship.submit_script(),
            "--import", "property_tests.protocol_mutants", "--protocol", "all", "--histories", "6",
            "--faults", "gentle,standard,hostile", "--no-counterexamples", "--no-progress", "--out", str(tmp_path / "o")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]  # the mutant's unexpected violations
    import json

    with open(tmp_path / "o" / "report.json") as f:
        assert report.deterministic_view(json.load(f)) == baseline
