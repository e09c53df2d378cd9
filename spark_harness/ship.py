"""Shipping rmqspec to Spark executors: one zip with every package a task imports.

The zip holds rmqspec's own packages and `attrs` (the only third-party package the
reference needs), so executors need nothing but Python 3.11+: `SparkContext.addPyFile`
(done by `rmqspec fuzz` for any non-local master) or `spark-submit --py-files`.

    python -m spark_harness.ship dist/      # writes dist/rmqspec-exec.zip, prints a spark-submit line
"""

from __future__ import annotations

import importlib
import os
import sys
import zipfile

from histories import files

PACKAGES = ("reference_impl", "spec", "histories", "rmqspec", "spark_harness", "property_tests", "model_checks", "attrs",
            "attr")
ZIP_NAME = "rmqspec-exec.zip"


def build_zip(directory: str) -> str:
    """Write the executors' zip into `directory`; entries in sorted order, fixed timestamps."""
    path = os.path.join(files.out_folder(directory), ZIP_NAME)
    with files.atomic(path, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in PACKAGES:
            try:
                pkg = importlib.import_module(name)
            except ImportError:
                continue
            root = os.path.dirname(pkg.__file__)
            base = os.path.dirname(root)
            for folder, dirs, names in sorted(os.walk(root)):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for f in sorted(names):
                    if f.endswith((".py", ".pyi", ".json", ".typed", ".properties")):
                        full = os.path.join(folder, f)
                        info = zipfile.ZipInfo(os.path.relpath(full, base), date_time=(2020, 1, 1, 0, 0, 0))
                        info.compress_type = zipfile.ZIP_DEFLATED
                        with open(full, "rb") as fh:
                            z.writestr(info, fh.read())
    return path


def submit_script() -> str:
    """The driver script spark-submit runs (rmqspec/spark_submit.py: the CLI's `fuzz`, which sits
    above this package, so it is named by path and never imported here)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(root, "rmqspec", "spark_submit.py")


def submit_command(zip_path: str, master: str = "local[2]", args: str = "--protocol all --histories 1000") -> str:
    return f"spark-submit --master {master} --py-files {zip_path} {submit_script()} {args} --out out/fuzz-submit"


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "dist"
    z = build_zip(target)
    print(z)
    print(submit_command(z))
