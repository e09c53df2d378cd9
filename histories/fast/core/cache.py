"""Where Numba keeps the fast worlds' compiled kernels: one folder per version of the twins.

Numba keys a cached function on its own file only, so after an edit of a module a kernel
calls (a layout, a transition) the kernel's old machine code would be loaded and run. And
from the zip that `rmqspec fuzz` ships to Spark executors (spark_harness/ship.py) Numba
keys it on the zip's path and modification time, both new for every job, so each
executor's Python worker compiled both twins afresh (minutes of CPU per job) and left the
old copies behind in ~/.cache/numba.

`DigestLocator` replaces both rules for the functions of `histories.fast`: the folder is
named by a digest of the modules the kernels are compiled from (`compiled_from`: the
twins' kernel modules, what they import of the package, and the reference modules whose
constants they import), read the same way from a checkout, an installed copy or the zip,
and it lives in the user's cache
(`NUMBA_CACHE_DIR/rmqspec` when that is set), so the driver, local executors and shipped
executors on one machine share one compile. Numba names a function's cache files by its
file's base name and qualified name; two twins each have a `world.py` with a `reset`, so
the locator's disambiguator adds the module's path in the package. The last `KEEP`
versions used stay; older folders are removed. Numba reads its index files with pickle, so
a folder is used only if no other user can write it (histories/files.py); where the user's
cache cannot be written, a private `$TMPDIR/rmqspec-<uid>/` serves, and where that is not
safely ours either, a fresh folder for this process only.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

import numba
from numba.core import caching

from histories import files

KEEP = 4  # folders of recently used versions kept (worktrees of several versions on one machine)
PACKAGE = "histories.fast"
REFERENCE = ("reference_impl", "spec")  # the packages whose constants the kernels import (folded)


def _modules(folder, prefix: str = ""):
    """(path in the package, file) of every module under `folder`, subpackages included."""
    for f in folder.iterdir():
        if f.name.endswith(".py"):
            yield prefix + f.name, f
        elif f.is_dir() and f.name != "__pycache__":
            yield from _modules(f, prefix + f.name + "/")


def _imported(source: bytes) -> set[str]:
    """The modules a module imports, and those its `from package import name` may name (a
    name that is not a module is skipped later)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def _defines_kernels(source: bytes) -> bool:
    """Whether a module decorates a function with Numba's `njit`."""
    return any(isinstance(node, ast.FunctionDef) and any("njit" in ast.unparse(d) for d in node.decorator_list)
               for node in ast.walk(ast.parse(source)))


def _source(module: str) -> bytes | None:
    """A module's source, read as `resources` reads the package's (a checkout, a copy, the zip)."""
    parent, _, last = module.rpartition(".")
    for package, name in ((module, "__init__.py"), (parent, last + ".py")):
        try:
            f = resources.files(package) / name
            if f.is_file():
                return f.read_bytes()
        except (ModuleNotFoundError, TypeError, ValueError):  # not a package, or no such module
            continue
    return None


def compiled_from() -> dict[str, bytes]:
    """Every module a kernel can read: those of the package that define one (`@njit`), and
    everything they import of the package, transitively, and the modules of the reference
    (reference_impl, spec) these import, whose constants Numba folds into the machine code (a
    constant must be defined where the twin imports it from, not computed from a third module).
    The Python side alone (runner, decode, crosscheck) is not among them: editing it compiles
    nothing again."""
    package = {(PACKAGE + "." + name[:-3].replace("/", ".")).removesuffix(".__init__"): f.read_bytes()
               for name, f in _modules(resources.files(PACKAGE))}
    todo = [m for m, source in package.items() if _defines_kernels(source)]
    seen: dict[str, bytes] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        source = package.get(module) if module.startswith(PACKAGE + ".") else _source(module)
        if source is None:  # a name, not a module
            continue
        seen[module] = source
        if module.startswith(PACKAGE + "."):  # the reference's modules it names, not theirs in turn
            todo += [m for m in _imported(source) if m.split(".")[0] in REFERENCE or m.startswith(PACKAGE + ".")]
    return seen


def digest() -> str:
    """A digest of the modules the kernels are compiled from (`compiled_from`), by name and
    content, wherever they are read from."""
    h = hashlib.sha256()
    for module, source in sorted(compiled_from().items()):
        h.update(module.encode() + b"\0" + source)
    return h.hexdigest()[:16]


def _base() -> Path:
    if numba.config.CACHE_DIR:
        return Path(numba.config.CACHE_DIR) / "rmqspec"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "rmqspec"


def _folder() -> str:
    """This version's folder, in a cache folder only we can write (Numba unpickles its index
    files: a folder another user could write is their code run as ours, docs/security.md)."""
    name = f"numba-{digest()}"
    try:
        base = files.owned_folder(_base())
        tempfile.TemporaryFile(dir=base).close()
        here = files.owned_folder(base / name)
    except OSError:  # a read-only home on an executor, or a cache folder that is not ours
        here, why = files.private_temp(name)
        if why:
            print(f"rmqspec: the compiled kernels are not cached across runs: {why}", file=sys.stderr)
            return str(here)
        base = here.parent
    os.utime(here)  # its time says when this version was last used
    others = sorted((p for p in base.glob("numba-*") if p != here), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[KEEP - 1:]:
        shutil.rmtree(old, ignore_errors=True)
    return str(here)


FOLDER = _folder()


class DigestLocator(caching._CacheLocator):
    """Numba's cache locator for the functions of histories.fast: `FOLDER`, stamped with `digest()`."""

    def __init__(self, py_func, py_file) -> None:
        self._lineno = py_func.__code__.co_firstlineno
        self._module = py_func.__module__.removeprefix(PACKAGE + ".").replace(".", "_")

    def get_cache_path(self) -> str:
        return FOLDER

    def get_source_stamp(self) -> str:
        return os.path.basename(FOLDER)

    def get_disambiguator(self) -> str:
        return f"{self._module}-{self._lineno}"

    @classmethod
    def from_function(cls, py_func, py_file):
        if not py_func.__module__.startswith(PACKAGE + "."):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install() -> None:
    """Put `DigestLocator` before Numba's own locators (before this package's kernels are decorated)."""
    ours = f"{__name__}.{DigestLocator.__name__}"
    rest = numba.config.CACHE_LOCATOR_CLASSES or ",".join(c.__name__ for c in caching.CacheImpl._locator_classes)
    if ours not in rest:
        numba.config.CACHE_LOCATOR_CLASSES = f"{ours},{rest}"
