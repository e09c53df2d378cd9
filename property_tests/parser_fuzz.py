"""Mutation fuzzing of every parser a user reaches, in process (issue 16).

Seeds are inputs the tool writes itself: short traces of every protocol (`simulate
--trace`), the scenario files in property_tests/scenarios, and `--config` objects. A
mutation flips bytes, drops, duplicates or swaps lines, cuts the text, or changes one JSON
value (its type swapped, a key removed or added, a number made huge, a value nested deep).
Each mutated input goes through the command line's own entry point (`rmqspec.cli.main`):
check-trace, replay, shrink, simulate --script, and --config (the parser simulate and
fuzz share, then fuzz's plan). The verdict must be exit 0, 1 or 2, with exactly one stderr
line for 2; exit 3 (an internal error), a traceback, or a hang is a crash.

`test_parser_fuzz.py` runs it under Hypothesis (bounded by the `ci` profile); the long run is

    python -m property_tests.parser_fuzz --minutes 60 --out out/parser_fuzz.json

which reports inputs, crash signatures, hangs, peak RSS over time and the rate, about 450
inputs a second on one core (docs/benchmarks.md records the runs).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from reference_impl import PROTOCOL_PACKAGES
from rmqspec import cli
from rmqspec.commands.usage import config_overrides
from spark_harness import plan

ROOT = Path(__file__).resolve().parent
SCENARIOS = sorted((ROOT / "scenarios").rglob("*.json"))
ENTRIES = ("check-trace", "replay", "shrink", "script", "config")
HANG_S = 60  # one input taking longer than this is a hang


# --- seeds: what the tool itself writes ---


def trace_seeds(steps: int = 25) -> dict[str, bytes]:
    """A short trace per protocol, under faults (so events of every kind appear)."""
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for p in PROTOCOL_PACKAGES:  # ours, not test mutants another module may have registered
            path = os.path.join(d, f"{p}.jsonl")
            code, _, _ = run(["simulate", "--protocol", p, "--steps", str(steps), "--faults", "standard", "--seed", "3",
                              "--trace", path, "--quiet"])
            assert code in (0, 1), (p, code)
            out[p] = Path(path).read_bytes()
    return out


# Short histories that violate a property (all expected: RocketMQ's own findings), so that a
# mutated trace handed to `shrink` reaches the shrinking itself, not only its parser and replay:
# protocol -> (nodes, profile, seed, steps), the violation a few steps before the end.
VIOLATING = {"election": (3, "hostile", 37, 25), "ha": (2, "hostile", 35, 25),
             "dledger_log": (3, "hostile", 30, 125), "dledger_commitlog": (3, "standard", 11, 70)}


def violating_seeds() -> dict[str, bytes]:
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for p, (nodes, profile, seed, steps) in VIOLATING.items():
            path = os.path.join(d, f"{p}.jsonl")
            code, _, _ = run(["simulate", "--protocol", p, "--nodes", str(nodes), "--steps", str(steps), "--faults",
                              profile, "--seed", str(seed), "--trace", path, "--quiet"])
            data = Path(path).read_bytes()
            assert code in (0, 1) and b'"violations":[{' in data, (p, code)
            out[p] = data
    return out


def scenario_seeds() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in SCENARIOS}


CONFIG_SEEDS = {
    "election": '{"max_heart_beat_leak": 4, "ledger_end_index": [1, 2, 3]}',
    "dledger_log": '{"dledger_version": "fixed", "clients": 1, "body_size": 100}',
    "dledger_commitlog": '{"old_messages": 6, "mapped_file_size_commit_log": 1024, "queues": 2}',
    "ha": '{"broker_role": "SYNC_MASTER", "messages": 5, "body_max": 200}',
    "offsets": '{"queues": 3, "consumers": 3, "slave_read_enable": true}',
    "nameserver": '{"scan_not_active_broker_interval_ms": 5000, "latency_max": [1, 2, 3, 4, 5, 6, 7], '
                  '"read_queue_nums": 3, "latency_fault_producers": ["p0"]}',
}


# --- mutations ---


def _json_values(v, path=()):
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _json_values(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _json_values(x, path + (i,))


REPLACEMENTS = [None, True, 0, -1, 1 << 31, 1 << 64, 10 ** 30, 1.5, -0.0, "", "x", "\x1b[2J\n", "n0", [], [1, "a"],
                {}, {"a": 1}, {"kind": "tick"}, "@LEADER", "$T+1"]


def mutate_json(value, rng: random.Random):
    """One change to one value of a parsed document."""
    nodes = list(_json_values(value))
    path, target = rng.choice(nodes)
    op = rng.randrange(6)
    if op == 0 or not path:  # swap the type
        new = rng.choice(REPLACEMENTS)
    elif op == 1:  # nest deep
        new = target
        for _ in range(rng.choice((5, 40, 200))):
            new = [new]
    elif op == 2 and isinstance(target, (int, float)) and not isinstance(target, bool):
        new = rng.choice((target * 10 ** rng.randrange(1, 30), -target - 1, target + 1, float(target)))
    elif op == 3 and isinstance(target, dict) and target:  # remove a key
        new = dict(target)
        del new[rng.choice(list(new))]
    elif op == 4 and isinstance(target, dict):  # add a key
        new = dict(target, **{rng.choice(("bogus", "type", "kind", "i", "at_ms", "x_note")): rng.choice(REPLACEMENTS)})
    elif op == 5 and isinstance(target, list) and target:  # grow or shrink a list
        new = target * rng.choice((0, 2, 50)) if len(target) < 100 else target[:1]
    else:
        new = rng.choice(REPLACEMENTS)
    if not path:
        return new
    parent = value
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = new
    return value


def mutate_text(data: bytes, rng: random.Random) -> bytes:
    """One mutation of a document or a JSON Lines file."""
    lines = data.split(b"\n")
    op = rng.randrange(10)
    if op == 0:  # flip bytes
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op == 1 and len(lines) > 1:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif op == 2:  # duplicate a line
        k = rng.randrange(len(lines))
        lines.insert(k, lines[k])
    elif op == 3 and len(lines) > 2:  # swap two lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 4:  # cut
        return data[:rng.randrange(len(data) + 1)]
    elif op == 5:  # a line after the result, or text JSON does not allow
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(
            (b'{"i": 99, "event": {"kind": "heal"}}', b'{"a": NaN}', b'{"a": 1, "a": 2}', b"[" * 2000,
             b'{"t": ' + b"9" * 5000 + b"}", b'{"x": 1e999}', b"\xff\xfe")))
    else:  # change one JSON value of one line (or of the whole document)
        whole = len(lines) <= 2 or rng.random() < 0.2
        try:
            if whole:
                return json.dumps(mutate_json(json.loads(data), rng)).encode()
            k = rng.randrange(len(lines))
            if not lines[k].strip():
                return data
            lines[k] = json.dumps(mutate_json(json.loads(lines[k]), rng)).encode()
        except (ValueError, RecursionError):
            return data
    return b"\n".join(lines)


def mutated(seed: bytes, rng: random.Random) -> bytes:
    data = seed
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        data = mutate_text(data, rng)
    return data


# --- entry points ---


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Hang()


_PARSER: list = []  # one argparse tree per process, built on first use


def run(argv: list[str]) -> tuple[int, str, str]:
    """`rmqspec ARGV` in this process: (exit code, stdout, stderr).

    main() builds its argparse tree afresh on every call, about 6 ms (over half of an input's
    time before): the fuzzed bytes are in the files, not in the fixed argv, and parse_args
    leaves a parser unchanged, so every call here shares one tree (a run of 600 inputs gives
    the same exit codes and messages either way). Patched only for the call, so another test
    that registers a protocol afterwards still gets a fresh parser from main()."""
    if not _PARSER:
        _PARSER.append(cli.build_parser())
    out, err = io.StringIO(), io.StringIO()
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          mock.patch.object(cli, "build_parser", lambda: _PARSER[0])):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def fuzz_plan(text: str, protocol: str) -> tuple[int, str, str]:
    """fuzz --config's own path past the shared parser: the plan builds every config it will run."""
    code, out, err = run(["simulate", "--protocol", protocol, "--config", text, "--steps", "30", "--quiet"])
    if code != 2:
        try:
            plan.make_plan(protocol, 1, config=config_overrides(text))
        except plan.PlanError:
            pass
    return code, out, err


def feed(entry: str, data: bytes, workdir: str, protocol: str = "election") -> tuple[int, str, str]:
    """One input through one entry point."""
    path = os.path.join(workdir, "input.json" if entry == "script" else "input.jsonl")
    if entry == "config":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        return fuzz_plan(text.replace("\x00", ""), protocol)
    Path(path).write_bytes(data)
    if entry == "check-trace":
        return run(["check-trace", path])
    if entry == "replay":
        return run(["replay", path, "--max-lines", "50"])
    if entry == "shrink":
        return run(["shrink", path, "--out", os.path.join(workdir, "shrunk.jsonl"), "--budget", "300"])
    return run(["simulate", "--script", path, "--steps", "300", "--quiet"])


def verdict(code: int, out: str, err: str) -> str | None:
    """None if the outcome is one the CLI promises; else a crash signature."""
    if code == 3 or "Traceback" in err or code not in (0, 1, 2):
        line = err.strip().splitlines()[-1] if err.strip() else f"exit {code}"
        return line.split(" This is a bug")[0][:200]
    if code == 2 and (len(err.splitlines()) != 1 or not err.startswith("rmqspec: error: ")):
        return f"exit 2 without exactly one error line: {err[:120]!r}"
    return None


def one(entry: str, data: bytes, workdir: str, protocol: str) -> str | None:
    """Run one input with a hang alarm; the crash signature or None."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        return verdict(*feed(entry, data, workdir, protocol))
    except Hang:
        return f"hang: {entry} took more than {HANG_S} s"
    except Exception as e:  # noqa: BLE001 - main() let something escape: a crash
        return f"escaped main: {type(e).__name__}: {str(e)[:120]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# --- the long run ---


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="mutation-fuzz rmqspec's parsers in process")
    ap.add_argument("--minutes", type=float, default=60.0, help="stop after this many minutes of wall time")
    ap.add_argument("--inputs", type=int, default=1_000_000, help="stop after this many inputs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    traces, scenarios, violating = trace_seeds(), scenario_seeds(), violating_seeds()
    crashes: dict[str, list] = {}
    counts = dict.fromkeys(ENTRIES, 0)
    rss: list[tuple[int, float]] = []
    start = time.time()
    n = 0
    with tempfile.TemporaryDirectory() as workdir:
        while n < args.inputs and time.time() - start < args.minutes * 60:
            entry = rng.choice(ENTRIES)
            protocol = rng.choice(sorted(traces))
            if entry == "shrink" and protocol in violating and rng.random() < 0.5:
                seed = violating[protocol]
            elif entry in ("check-trace", "replay", "shrink"):
                seed = traces[protocol]
            elif entry == "script":
                seed = scenarios[rng.choice(sorted(scenarios))]
            else:
                seed = CONFIG_SEEDS[protocol].encode()
            data = mutated(seed, rng)
            sig = one(entry, data, workdir, protocol)
            n += 1
            counts[entry] += 1
            if sig is not None:
                crashes.setdefault(sig, []).append(entry)
                if len(crashes[sig]) == 1:
                    Path(workdir, f"crash-{len(crashes)}.bin").write_bytes(data)
                    print(f"CRASH [{entry}] {sig}", file=sys.stderr, flush=True)
            if n % 1000 == 0:
                rss.append((n, round(peak_rss_mib(), 1)))
                print(f"{n:,} inputs, {len(crashes)} crash signature(s), peak RSS {rss[-1][1]} MiB, "
                      f"{n / (time.time() - start):.0f}/s", file=sys.stderr, flush=True)
    figures = {"inputs": n, "minutes": round((time.time() - start) / 60, 1), "per_entry": counts,
               "crash_signatures": {k: len(v) for k, v in crashes.items()},
               "hangs": sum(len(v) for k, v in crashes.items() if k.startswith("hang")),
               "peak_rss_mib": rss, "command": "python -m property_tests.parser_fuzz " + " ".join(argv or sys.argv[1:])}
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
