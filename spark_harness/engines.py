"""Where a fuzz plan runs: one process (`--master none`), a process pool (for
`rmqspec bench --fuzz`), or Spark (`local[N]`, `spark://host:port`, or whatever master
spark-submit was given).

Every engine runs the same pure `plan.run_chunk` over the plan's chunks and ends with
an `Aggregate` of all per-history summaries; nothing crosses between Python and the
JVM per event, only one summary row per history.

- none / processes: summaries stream into `histories.jsonl` and the aggregate.
- Spark: chunks are partitions; the summaries become a DataFrame written as Parquet
  (`histories.parquet`), which is then read back and aggregated partition by
  partition on the executors; the driver merges the partial aggregates one at a time
  as `toLocalIterator` hands them over, so driver memory stays flat.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from importlib import resources

from histories import files
from spark_harness import java, ship
from spark_harness import plan as plan_mod
from spark_harness.aggregate import Aggregate
from spark_harness.progress import Progress

LOG4J_NAME = "log4j2.properties"
SUBMITTED = "submitted"  # --master given by spark-submit
JOB_GROUP = "rmqspec-fuzz"


# --- one process and a process pool ---


class RowSink:
    """Per-history summaries to JSON Lines (optional; in place once closed, as far as the run
    got) and into the aggregate."""

    def __init__(self, path: str | None) -> None:
        self.agg = Aggregate()
        self._files = contextlib.ExitStack()
        self.f = self._files.enter_context(files.atomic(path)) if path else None

    def __call__(self, row: dict) -> None:
        self.agg.add(row)
        if self.f is not None:
            self.f.write(json.dumps(row | {"state_sketch": bytes(row["state_sketch"]).hex()},
                                    separators=(",", ":")) + "\n")

    def close(self) -> Aggregate:
        self._files.close()
        return self.agg


def run_local(plan: plan_mod.Plan, jsonl: str | None, progress: Progress) -> Aggregate:
    sink = RowSink(jsonl)
    try:
        for chunk in plan.chunks(1):
            for row in plan_mod.run_chunk(plan, chunk):
                sink(row)
                progress.advance(1)
    finally:
        agg = sink.close()
    return agg


def _chunk_rows(plan: plan_mod.Plan, chunk: plan_mod.Chunk) -> list[dict]:
    return list(plan_mod.run_chunk(plan, chunk))


def run_processes(plan: plan_mod.Plan, workers: int, jsonl: str | None, progress: Progress,
                  pool: multiprocessing.pool.Pool | None = None) -> Aggregate:
    """The same chunks on a pool of `workers` processes (spawned: no state shared)."""
    sink = RowSink(jsonl)
    own = pool is None
    if own:
        pool = multiprocessing.get_context("spawn").Pool(workers)
    try:
        for rows in pool.imap_unordered(functools.partial(_chunk_rows, plan), plan.chunks(workers)):
            for row in rows:
                sink(row)
            progress.advance(len(rows))
    finally:
        if own:
            pool.close()
            pool.join()
        agg = sink.close()
    return agg


# --- Spark ---


def row_schema():
    from pyspark.sql import types as T

    violation = T.StructType([
        T.StructField("property", T.StringType(), False), T.StructField("step", T.IntegerType(), False),
        T.StructField("t_ms", T.LongType(), False), T.StructField("expected", T.StringType(), True),
        T.StructField("detail", T.StringType(), True)])
    strings = T.ArrayType(T.StringType(), False)
    return T.StructType([
        T.StructField("protocol", T.StringType(), False), T.StructField("profile", T.StringType(), False),
        T.StructField("nodes", T.IntegerType(), False), T.StructField("seed", T.LongType(), False),
        T.StructField("variant", T.MapType(T.StringType(), T.StringType(), False), False),
        T.StructField("config", T.StringType(), False),
        T.StructField("steps", T.IntegerType(), False), T.StructField("t_ms", T.LongType(), False),
        T.StructField("stopped", T.StringType(), False),
        T.StructField("violations", T.ArrayType(violation, False), False),
        T.StructField("unexpected", T.IntegerType(), False), T.StructField("expected", T.IntegerType(), False),
        T.StructField("faults", T.MapType(T.StringType(), T.IntegerType(), False), False),
        T.StructField("stats", T.MapType(T.StringType(), T.DoubleType(), False), False),
        T.StructField("actions", strings, False), T.StructField("branches", strings, False),
        T.StructField("kinds", strings, False), T.StructField("states", T.IntegerType(), False),
        T.StructField("state_sketch", T.BinaryType(), False), T.StructField("engine", T.StringType(), False)])


FIELDS = ("protocol", "profile", "nodes", "seed", "variant", "config", "steps", "t_ms", "stopped", "violations",
          "unexpected", "expected", "faults", "stats", "actions", "branches", "kinds", "states", "state_sketch",
          "engine")
VIOLATION_FIELDS = ("property", "step", "t_ms", "expected", "detail")


def _as_tuple(row: dict) -> tuple:
    out = [row[k] for k in FIELDS]
    out[FIELDS.index("violations")] = [tuple(v[k] for k in VIOLATION_FIELDS) for v in row["violations"]]
    return tuple(out)


def _rows_of_chunks(plan: plan_mod.Plan, chunks: Iterator[plan_mod.Chunk]) -> Iterator[tuple]:
    for chunk in chunks:
        for row in plan_mod.run_chunk(plan, chunk):
            yield _as_tuple(row)


def _partial_aggregate(rows: Iterator) -> Iterator[Aggregate]:
    agg = Aggregate()
    for r in rows:
        agg.add(r.asDict(recursive=True))
    yield agg


def quiet_log4j() -> str:
    """The Log4j2 configuration both JVMs load (errors only, on stderr): the file shipped in
    this package, or, where the package is a zip, a copy in a private folder of ours. Never a
    fixed path under a shared temp folder, where another user's file or symlink could be
    waiting (docs/security.md)."""
    shipped = resources.files(__package__) / LOG4J_NAME
    if isinstance(shipped, os.PathLike) and os.path.isfile(shipped):
        return os.fspath(shipped)
    folder, _ = files.private_temp("spark")
    return files.write_text(os.path.join(folder, LOG4J_NAME), shipped.read_text(encoding="utf-8"))


def active_session():
    """The SparkSession open in this process, if any (None also when pyspark is missing)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def session(master: str, app: str = "rmqspec fuzz"):
    """A SparkSession for `master` (SUBMITTED: the one spark-submit set), quiet and
    with its Python workers on this interpreter. Java comes from spark_harness.java."""

    java.ensure_java_env()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master != SUBMITTED and active.sparkContext.master != master:
        active.stop()
    log4j = quiet_log4j()
    options = {"spark.app.name": app}
    if master != SUBMITTED:
        options["spark.master"] = master
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        options |= {"spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable}
    if master.startswith(("local", "spark://127.0.0.1", "spark://localhost")):
        options |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    options |= {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.python.worker.reuse": "true",
                "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
                "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}"}
    _driver_jvm_apart(options)
    b = SparkSession.builder
    for key, value in options.items():
        b = b.config(key, value)
    handler = signal.getsignal(signal.SIGINT)
    spark = b.getOrCreate()
    if threading.current_thread() is threading.main_thread():
        # PySpark's own SIGINT handler cancels the jobs through py4j from inside the py4j call
        # the main thread is in (three tracebacks on Ctrl-C): the caller's handler stays.
        signal.signal(signal.SIGINT, handler)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_quietly(spark) -> None:
    """Stop a session whose job is still running (a Ctrl-C, SIGTERM or error on the way out):
    the JVM's loggers off first, then its jobs cancelled, so the context's shutdown under a
    running job (a Parquet write aborting, tasks killed) prints no Java errors after our one
    line. Each call is best effort: an interrupted py4j call may have left its connection
    broken, and stopping must go on."""
    sc = spark.sparkContext
    for quiet in (lambda: sc.setLogLevel("OFF"), sc.cancelAllJobs):
        try:
            quiet()
        except Exception:  # noqa: BLE001 - see the docstring
            pass
    spark.stop()


def _driver_jvm_apart(options: dict) -> None:
    """Start Spark's driver JVM (the py4j gateway, once per process) in a session of its own,
    as the builder would but for that: a Ctrl-C or SIGTERM sent to our process group (a
    terminal, `timeout`, a CI runner) then reaches only us, and we stop Spark, instead of
    the JVM and its Python workers dying under a running job with pages of Java errors.
    The JVM still ends with us: it exits when its stdin, a pipe from this process, closes."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return  # started already, or by spark-submit
    conf = SparkConf(loadDefaults=False).setAll(options.items())
    with SparkContext._lock:
        SparkContext._gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
        SparkContext._jvm = SparkContext._gateway.jvm


class Watcher(threading.Thread):
    """Polls Spark's status tracker for a job group's finished tasks (`tasks` of them,
    standing for `total` items on the progress bar)."""

    def __init__(self, sc, group: str, tasks: int, progress: Progress, total: int | None = None) -> None:
        super().__init__(daemon=True)
        self.sc, self.group, self.tasks, self.progress = sc, group, tasks, progress
        self.total = total if total is not None else tasks
        self.stop = threading.Event()

    def run(self) -> None:
        st = self.sc.statusTracker()
        while not self.stop.wait(0.5):
            try:
                done = running = 0
                for job in st.getJobIdsForGroup(self.group):
                    info = st.getJobInfo(job)
                    for sid in info.stageIds if info else ():
                        s = st.getStageInfo(sid)
                        if s is not None and s.numTasks == self.tasks:
                            done, running = max(done, s.numCompletedTasks), s.numActiveTasks
                self.progress.update(round(self.total * done / self.tasks),
                                     f"tasks {done}/{self.tasks}, {running} running")
            except Exception:  # noqa: BLE001 - status is best effort; the job itself reports errors
                pass


def run_spark(plan: plan_mod.Plan, spark, parquet: str, progress: Progress,
              ship_dir: str | None = None, on_ready: Callable[[str], None] | None = None) -> Aggregate:
    """Run the plan as a Spark job; per-history rows to `parquet`; return the aggregate."""
    sc = spark.sparkContext
    if ship_dir is not None and not sc.master.startswith("local"):

        # spark-submit --py-files may have shipped the zip already (Spark refuses a second one)
        if ship.ZIP_NAME not in (sc.getConf().get("spark.submit.pyFiles") or ""):
            sc.addPyFile(ship.build_zip(files.subfolder(*os.path.split(ship_dir))))
    if on_ready is not None:
        on_ready(sc.master)
    chunks = plan.chunks(sc.defaultParallelism)
    rdd = sc.parallelize(chunks, len(chunks)).mapPartitions(functools.partial(_rows_of_chunks, plan))
    df = spark.createDataFrame(rdd, row_schema())
    watcher = Watcher(sc, JOB_GROUP, len(chunks), progress, plan.total)
    sc.setJobGroup(JOB_GROUP, f"rmqspec fuzz: {plan.total} histories")
    watcher.start()
    try:
        df.write.mode("overwrite").parquet(parquet)
    finally:
        watcher.stop.set()
        watcher.join()
        sc.setJobGroup("rmqspec-aggregate", "rmqspec fuzz: aggregate")
    progress.update(plan.total, f"tasks {len(chunks)}/{len(chunks)}")
    agg = Aggregate()
    for part in spark.read.parquet(parquet).rdd.mapPartitions(_partial_aggregate).toLocalIterator():
        agg.merge(part)
    return agg
