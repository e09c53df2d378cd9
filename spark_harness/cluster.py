"""A standalone Spark cluster on this machine, started from the installed pyspark.

One master and one worker JVM, both on 127.0.0.1, run with `spark-class` from the
pyspark wheel (no separate Spark download). The tests use it to run a fuzz job on a
real cluster; users can try `--master spark://...` the same way:

    python -m spark_harness.cluster --cores 2      # prints the master URL; Ctrl-C stops both JVMs

Logs go to the work directory (a temporary one unless given).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from spark_harness import java


def spark_home() -> str:
    if os.environ.get("SPARK_HOME"):
        return os.environ["SPARK_HOME"]
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def spark_bin(name: str) -> str:
    return os.path.join(spark_home(), "bin", name)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ClusterError(RuntimeError):
    pass


class LocalCluster:
    """`with LocalCluster(cores=2) as url:` a master and a worker for the block."""

    def __init__(self, cores: int = 2, memory: str = "2g", host: str = "127.0.0.1", work_dir: str | None = None,
                 timeout_s: float = 120) -> None:
        self.cores, self.memory, self.host, self.timeout_s = cores, memory, host, timeout_s
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="rmqspec-spark-")
        self.procs: list[subprocess.Popen] = []
        self.port = free_port(host)
        self.ui_port = free_port(host)
        self.url = f"spark://{host}:{self.port}"

    def _env(self) -> dict:
        java.ensure_java_env()
        env = dict(os.environ)
        env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP=self.host, PYSPARK_PYTHON=sys.executable,
                   SPARK_WORKER_DIR=os.path.join(self.work_dir, "worker"), SPARK_NO_DAEMONIZE="1")
        return env

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(os.path.join(self.work_dir, f"{name}.log"), "w", encoding="utf-8")
        self.procs.append(subprocess.Popen([spark_bin("spark-class"), *args], env=self._env(), stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True))

    def state(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.ui_port}/json/", timeout=2) as r:
                return json.loads(r.read().decode())
        except (OSError, ValueError):
            return None

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise ClusterError(f"{what}: a Spark JVM exited ({p.returncode}); see {self.work_dir}")
            st = self.state()
            if st is not None and ready(st):
                return
            time.sleep(0.5)
        raise ClusterError(f"{what}: not ready after {self.timeout_s:.0f} s; see {self.work_dir}")

    def start(self) -> str:
        os.makedirs(self.work_dir, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", self.host, "--port", str(self.port),
                               "--webui-port", str(self.ui_port)])
        self._wait(lambda st: True, "master")
        self._spawn("worker", ["org.apache.spark.deploy.worker.Worker", "--host", self.host, "--cores",
                               str(self.cores), "--memory", self.memory, "--webui-port", str(free_port(self.host)),
                               self.url])
        self._wait(lambda st: st.get("aliveworkers", 0) >= 1, "worker")
        return self.url

    def stop(self) -> None:
        for p in reversed(self.procs):  # the worker first: it stops its executors
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []

    def __enter__(self) -> str:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m spark_harness.cluster", description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--memory", default="2g")
    ap.add_argument("--work-dir", default=None)
    args = ap.parse_args(argv)
    cluster = LocalCluster(args.cores, args.memory, work_dir=args.work_dir)
    try:
        with cluster as url:
            print(f"master {url}  (logs in {cluster.work_dir}); Ctrl-C stops it")
            print(f"  rmqspec fuzz --master {url} --histories 1000")
            sys.stdout.flush()
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    except (ClusterError, java.JavaMissing) as e:
        print(f"cluster: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
