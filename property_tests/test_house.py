"""The house: every protocol's coverage universe is what it was before the move, and the
import graph points one way (docs/architecture.md).

The snapshot (property_tests/snapshots/coverage_universe.json) holds, per protocol, the
roles, actions and branches a default fuzz run's coverage totals count. It changes only
on purpose: regenerate it with `python -m property_tests.test_house` and say why.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest

from reference_impl import core
from spark_harness import coverage
from spark_harness.history import config_of
from spark_harness.plan import make_plan

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "property_tests" / "snapshots" / "coverage_universe.json"
PROTOCOLS = ("dledger_commitlog", "dledger_log", "election", "ha", "nameserver", "offsets")

# Layers, lowest first: a module may import its own layer and the ones below it.
LAYERS = [("reference_impl.core",), ("reference_impl",), ("spec",), ("histories",),
          ("property_tests.support", "model_checks", "spark_harness", "conform"), ("rmqspec",)]
CHECKERS = ("property_tests.support", "model_checks", "spark_harness", "conform")


def universes() -> dict:
    out = {}
    for p in PROTOCOLS:
        plan = make_plan(p, 1000)
        cfgs = [config_of(s) for s in plan.universe_specs(p)]
        out[p] = {"roles": coverage.role_universe(cfgs), "actions": coverage.action_universe(cfgs),
                  "branches": coverage.branch_universe(p)}
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_coverage_universe_is_unchanged(protocol):
    assert universes()[protocol] == json.loads(SNAPSHOT.read_text())[protocol]


def _modules() -> dict[str, Path]:
    out = {}
    for top in ("reference_impl", "spec", "histories", "property_tests", "model_checks", "spark_harness", "conform",
                "rmqspec"):
        for path in (ROOT / top).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, name: str, mods: dict) -> list[tuple[str, int, bool]]:
    """(imported module of ours, line, at top level) for every import in the file."""
    tree = ast.parse(path.read_text())
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.append((t, node.lineno, id(node) in top))
    return found


def _layer(name: str) -> int:
    best = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for pre in prefixes:
            if name == pre or name.startswith(pre + "."):
                best = max(best, (len(pre), i))
    return best[1]


def _is_test(name: str) -> bool:
    return name.startswith("property_tests.") and not name.startswith("property_tests.support") \
        and name != "property_tests.protocol_mutants"


def test_imports_point_down_and_never_hide_in_functions():
    """Every import of our own code is at the top of its file and points to its own layer
    or one below; checkers never import each other. Test modules (leaves nothing imports)
    may import any layer: they test all of them."""
    mods = _modules()
    bad = []
    for name, path in mods.items():
        if _is_test(name) or name == "property_tests":
            continue
        me = _layer(name)
        for target, line, top in _imports(path, name, mods):
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if not top:
                bad.append(where + " inside a block")
            other = _layer(target)
            if other > me and not (name == "property_tests.protocol_mutants" and target.startswith(CHECKERS[0])):
                bad.append(where + ", a layer above it")
            mine = next((c for c in CHECKERS if name.startswith(c)), None)
            theirs = next((c for c in CHECKERS if target.startswith(c)), None)
            if mine and theirs and mine != theirs:
                bad.append(where + ", another checker")
    assert not bad, "\n".join(bad)


def test_nothing_outside_property_tests_imports_property_tests():
    """The tests sit above everything they test: the CLI, the checkers and the layers below
    never import test code (what they share with the tests lives in histories/: the mutants,
    the reference-made implementation logs)."""
    mods = _modules()
    bad = []
    for name, path in mods.items():
        if name == "property_tests" or name.startswith("property_tests."):
            continue
        bad += [f"{path.relative_to(ROOT)}:{line} imports {target}" for target, line, _ in _imports(path, name, mods)
                if target == "property_tests" or target.startswith("property_tests.")]
    assert not bad, "\n".join(bad)


def test_core_imports_nothing_outside_core_and_protocols_not_each_other():
    mods = _modules()
    bad = []
    for name, path in mods.items():
        if not name.startswith("reference_impl."):
            continue
        parts = name.split(".")
        for target, line, _ in _imports(path, name, mods):
            if not target.startswith("reference_impl"):
                bad.append(f"{name} imports {target}")
            elif parts[1] == "core" and not target.startswith("reference_impl.core"):
                bad.append(f"{name}:{line} (core) imports {target}")
            elif parts[1] != "core" and target.count(".") >= 1:
                theirs = target.split(".")[1]
                # a protocol builds on core and the shared vocabulary; the DLedger log on the
                # election (its member), RocketMQ-on-DLedger on both
                ok = theirs in ("core", "rocketmq", parts[1]) or \
                    (theirs == "election" and parts[1] in ("dledger_log", "dledger_commitlog")) or \
                    (theirs == "dledger_log" and parts[1] == "dledger_commitlog")
                if not ok:
                    bad.append(f"{name}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def test_no_import_circle():
    mods = _modules()
    edges = {name: {t for t, _, _ in _imports(path, name, mods)} for name, path in mods.items()}
    index, low, stack, on, circles = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, circles


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_protocol_is_one_folder_with_its_theory_and_its_plug_in(protocol):
    folder = ROOT / "reference_impl" / protocol
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    assert doc and ("Java" in doc or "|" in doc), f"{protocol}/__init__.py needs a theory of operation"
    assert not [f.name for f in folder.glob(f"{protocol}_*.py")], "files inside need no protocol prefix"
    assert core.protocol(protocol).name == protocol and (folder / "world.py").exists()
    files = {f.stem for f in folder.glob("*.py")}
    assert set(core.protocol(protocol).on_tick.__module__.split(".")[1:2]) == {protocol}
    assert "world" in files



# The twins' house (docs/fast-worlds.md): histories/fast/core holds what every twin shares, and each
# twin is a package named after the reference package it mirrors, its modules named after the
# reference's modules (or a part of one, `<module>_<part>`) or after a role every twin has.
FAST = ROOT / "histories" / "fast"
TWIN_ROLES = {"__init__", "layout", "runner", "decode", "crosscheck", "explore", "mutants", "causes", "monitor",
              "monitor_steps", "replies", "network", "world_observe", "world_nodes", "world_client", "ghost"}
# A kernel function (one Numba compiles) longer than this is split: helpers cost nothing once compiled.
KERNEL_LINES = 100
# The abbreviations the flat twins used, and short local names in general: a reader should not need
# a glossary. One- and two-letter names are kept to loop indexes, bounds and numbered fields.
OLD_NAMES = {"LEI", "LET", "TTTL", "LLHB", "LSHB", "LSUCC", "NTRV", "KMAX", "NEEDINC", "LPR", "NCP", "TIF", "TLW",
             "RTYPE", "RSEQ", "RTERM", "RVALID", "RACC", "RBIG", "RHASL", "W_NF", "W_NR", "E_MK", "R_CK", "O_MK",
             "OT_SEND", "OT_OBS", "C_DMIN", "C_DMAX", "C_NT", "nd", "fl", "ws", "wmk", "ck", "mk", "rq", "sv"}
SHORT_OK = {"_", "lo", "hi", "at", "ok", "up", "of", "mt", "MT"}  # mt: the Mersenne Twister
# mt.py follows CPython's _randommodule.c line by line, names included.
SHORT_EXEMPT = {"core/mt.py"}


def _twins() -> list[str]:
    return sorted(d.name for d in FAST.iterdir() if d.is_dir() and (d / "__init__.py").exists() and d.name != "core")


def _fast_files() -> list[Path]:
    return sorted(FAST.rglob("*.py"))


def _kernels(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("njit" in ast.unparse(d) for d in node.decorator_list):
            yield node


def test_the_fast_worlds_are_a_core_and_a_package_per_twin():
    assert {f.name for f in FAST.glob("*.py")} == {"__init__.py"}, "no flat modules beside the packages"
    assert _twins(), "no twin packages found"
    for twin in _twins():
        assert twin in PROTOCOLS and (ROOT / "reference_impl" / twin).is_dir(), f"{twin}: not a reference package"


@pytest.mark.parametrize("twin", ["election", "dledger_log"])
def test_a_twins_modules_are_named_after_the_reference_modules_it_mirrors(twin):
    assert twin in _twins()
    reference = {f.stem for f in (ROOT / "reference_impl" / twin).glob("*.py")}
    odd = []
    for f in (FAST / twin).glob("*.py"):
        stem = f.stem
        if stem in reference or stem in TWIN_ROLES or any(stem.startswith(r + "_") for r in reference):
            continue
        odd.append(f.name)
    assert not odd, f"name these after the reference module they mirror or a twin role: {odd}"
    for f in (FAST / twin).glob("*.py"):
        assert ast.get_docstring(ast.parse(f.read_text())), f"{f.relative_to(ROOT)} needs a docstring"


def test_kernel_functions_are_short():
    long = []
    for path in _fast_files():
        for fn in _kernels(ast.parse(path.read_text())):
            body = fn.body[1:] if ast.get_docstring(fn) and len(fn.body) > 1 else fn.body
            lines = fn.end_lineno - body[0].lineno + 1
            if lines > KERNEL_LINES:
                long.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}: {lines} lines")
    assert not long, "\n".join(long)


def test_kernel_state_is_one_table():
    """Kernel functions take the state table `S` (and scalars), not the arrays it holds: only
    the leaf helpers that work on one array (the generator, a store's rows) take one."""
    bad = []
    for path in _fast_files():
        for fn in _kernels(ast.parse(path.read_text())):
            names = [a.arg for a in fn.args.args]
            if "S" in names and names[0] != "S":
                bad.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} takes S but not first")
            if len(names) > 16:
                bad.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} takes {len(names)} arguments")
    assert not bad, "\n".join(bad)


def test_names_a_reader_understands():
    bad = []
    for path in _fast_files():
        rel = path.relative_to(FAST).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append(node.id)
            elif isinstance(node, ast.arg):
                names.append(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.append(node.name)
            for name in names:
                short = len(name.strip("_")) <= 2 and not (len(name) <= 2 and name[0].isalpha()
                                                            and (len(name) == 1 or name[1].isdigit()))
                if name in OLD_NAMES or (short and name not in SHORT_OK and rel not in SHORT_EXEMPT):
                    bad.append(f"histories/fast/{rel}:{node.lineno} {name}")
    assert not bad, "\n".join(sorted(set(bad)))


def test_reference_constants_are_imported_not_copied():
    """A constant the reference defines is imported by the twin (Numba folds module globals), never
    written down again: a copy would go stale when the reference changes."""
    reference = {}
    for path in (ROOT / "reference_impl").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.isupper():
                        reference[target.id] = path.relative_to(ROOT)
    copies = []
    for path in _fast_files():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                copies += [f"{path.relative_to(ROOT)}:{node.lineno} {t.id} (reference: {reference[t.id]})"
                           for t in targets if isinstance(t, ast.Name) and t.id in reference]
    assert not copies, "\n".join(copies)


def test_mutants_stay_out_of_production_handlers():
    """Test mutants live in a twin's mutants.py; a production handler reaches one only at a seam,
    under `if mutant is not None:` (compiled out when the kernel runs with mutant=None)."""
    bad = []
    for path in _fast_files():
        rel = path.relative_to(ROOT)
        text = path.read_text()
        if path.name == "mutants.py":
            continue
        if "MUT_" in text:
            bad.append(f"{rel}: MUT_ constants belong in a mutants module")
        tree = ast.parse(text)
        guarded = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "mutant is not None":
                guarded |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "mutants" \
                    and id(node) not in guarded and not path.name == "runner.py":
                bad.append(f"{rel}:{node.lineno} mutants.{node.attr} outside an `if mutant is not None:` seam")
    assert not bad, "\n".join(bad)


def test_no_private_name_crosses_a_module():
    """No `from histories.fast... import _name` anywhere, and no re-exports of underscore names."""
    bad = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("histories.fast"):
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                bad += [f"{path.relative_to(ROOT)} exports {e.value}" for e in ast.walk(node.value)
                        if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.startswith("_")]
    assert not bad, "\n".join(bad)


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(universes(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {os.path.relpath(SNAPSHOT)}", file=sys.stderr)
