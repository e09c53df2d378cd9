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
          ("property_tests.support", "model_checks", "spark_harness"), ("rmqspec",)]
CHECKERS = ("property_tests.support", "model_checks", "spark_harness")


def universes() -> dict:
    out = {}
    for p in PROTOCOLS:
        plan = make_plan(p, 1000)
        cfgs = [config_of(plan.spec(p, k)) for k in range(len(plan.profiles[p]) * len(plan.nodes[p]))]
        out[p] = {"roles": coverage.role_universe(cfgs), "actions": coverage.action_universe(cfgs),
                  "branches": coverage.branch_universe(p)}
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_coverage_universe_is_unchanged(protocol):
    assert universes()[protocol] == json.loads(SNAPSHOT.read_text())[protocol]


def _modules() -> dict[str, Path]:
    out = {}
    for top in ("reference_impl", "spec", "histories", "property_tests", "model_checks", "spark_harness", "rmqspec"):
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


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(universes(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {os.path.relpath(SNAPSHOT)}", file=sys.stderr)
