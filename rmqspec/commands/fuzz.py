"""`rmqspec fuzz`: many randomized histories on Spark, a report and shrunk counterexamples
(docs/fuzzing.md)."""

from __future__ import annotations

import argparse
import json
import re
import sys

from histories import files, formats, view
from reference_impl import core
from rmqspec.commands.usage import (
    INT64,
    MAX_BUDGET,
    MAX_HISTORIES,
    MAX_STEPS,
    UsageError,
    add_import,
    add_progress,
    comma_list,
    config_overrides,
    int_in,
)
from spark_harness import fuzz, plan, shrink
from spark_harness.java import JavaMissing

# `submitted` is what rmqspec/spark_submit.py passes: the master spark-submit was given
MASTER = re.compile(r"submitted|none|local(\[(\d{1,4}|\*)(,\d{1,4})?\])?|spark://[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*"
                    r"|yarn|k8s://[A-Za-z0-9.:/_-]+")

NAME = "fuzz"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="many randomized histories on Spark (docs/fuzzing.md)")
    parser.add_argument("--protocol", default="all",
                        help=f"one of: {', '.join(core.protocol_names())}; a comma-separated list; or all (default)")
    parser.add_argument("--histories", type=int_in(1, MAX_HISTORIES), default=1000,
                        help=f"histories per protocol, 1..{MAX_HISTORIES:,} (default 1000)")
    parser.add_argument("--steps", type=int_in(1, MAX_STEPS), default=None,
                        help=f"at most this many events per history, 1..{MAX_STEPS:,} (default 50000: a safety cap; "
                             "histories end 60 s after faults stop)")
    parser.add_argument("--seed", type=int_in(0, INT64[1] - MAX_HISTORIES), default=1,
                        help="seed of the first history, a non-negative 64-bit integer (default 1)")
    parser.add_argument("--master", default="local[*]",
                        help="Spark master: local[N], spark://host:port, ...; 'none' runs in this process "
                             "(default local[*])")
    parser.add_argument("--out", default="out/fuzz", help="output directory (default out/fuzz)")
    parser.add_argument("--engine", choices=("fast", "reference"), default="fast",
                        help="fast: a protocol's compiled fast world where one exists, judged by the reference "
                             "(see --judge); reference: the reference only (default fast)")
    parser.add_argument("--judge", choices=("all", "sample"), default="sample",
                        help="with the fast engine, which histories with a violation the reference re-runs: "
                             "sample (default): every one with an unexpected violation and about 1 in "
                             f"{plan.JUDGE_EVERY} of the rest; all")
    parser.add_argument("--coverage-sample", default=None, metavar="N|all",
                        help="with the fast engine: histories per protocol the reference also runs whole, its row "
                             "required to agree with the fast world's, coverage and distinct states included, "
                             f"0..{MAX_HISTORIES:,} or all (default 0: the fast world computes both over every "
                             "history)")
    parser.add_argument("--faults", type=comma_list(str), default=None,
                        help="fault profiles, comma-separated, or 'all' (default: every profile with faults)")
    parser.add_argument("--nodes", type=comma_list(int_in(1, 64), "integers in 1..64"), default=None,
                        help="cluster sizes 1..64, comma-separated (default per protocol)")
    parser.add_argument("--config", default=None,
                        help="protocol config overrides for every history, as JSON (as simulate --config), "
                             "e.g. '{\"broker_role\": \"SYNC_MASTER\"}'")
    parser.add_argument("--configs", choices=("cycle", "default"), default="cycle",
                        help="cycle: every version profile (fixed included) and drawn config switches, swarm subsets "
                             "of fault kinds and directed shapes per history (default); default: the protocol's "
                             "defaults for every history (docs/fuzzing.md, Variants)")
    parser.add_argument("--parquet", default=None,
                        help="where Spark writes per-history rows (default OUT/histories.parquet)")
    parser.add_argument("--shrink-budget", type=int_in(1, MAX_BUDGET), default=None,
                        help="replayed steps per counterexample of an unexpected violation, "
                             f"1..{MAX_BUDGET:,} (default {shrink.DEFAULT_BUDGET:,})")
    parser.add_argument("--shrink-budget-expected", type=int_in(1, MAX_BUDGET), default=None,
                        help="replayed steps per counterexample of an expected violation (RocketMQ's documented "
                             f"behaviour: it illustrates, it need not be smallest), 1..{MAX_BUDGET:,} "
                             f"(default {shrink.EXPECTED_BUDGET:,})")
    parser.add_argument("--no-view", action="store_true",
                        help="do not write the HTML view (index.html and a page per counterexample; docs/view.md)")
    parser.add_argument("--no-counterexamples", action="store_true", help="do not replay and shrink failing histories")
    add_progress(parser)
    parser.add_argument("--no-plots", action="store_true", help="no report plots (report.md without pictures)")
    parser.add_argument("--list-profiles", action="store_true", help="list the fault profiles per protocol and exit")
    parser.add_argument("--json", action="store_true", help="print report.json instead of the summary")
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.list_profiles:
        print(json.dumps(fuzz.profiles_json(), indent=2) if args.json else fuzz.profiles_table())
        return 0
    config = config_overrides(args.config)
    if not MASTER.fullmatch(args.master):
        raise UsageError(f"--master must be none, local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL; "
                         f"got {formats.escape(args.master[:80])!r}")
    opts = fuzz.FuzzOptions(protocol=args.protocol, histories=args.histories, seed=args.seed, master=args.master,
                            config=config, vary=args.configs == "cycle", engine=args.engine,
                            coverage_sample=_coverage_sample(args.coverage_sample), judge=args.judge,
                            out=args.out, faults=args.faults, nodes=args.nodes, imports=tuple(args.imports),
                            parquet=args.parquet, counterexamples=not args.no_counterexamples,
                            progress=not args.no_progress, plots=not args.no_plots, view=not args.no_view)
    if args.steps:
        opts.steps = args.steps
    if args.shrink_budget:
        opts.shrink_budget = args.shrink_budget
    if args.shrink_budget_expected:
        opts.shrink_budget_expected = args.shrink_budget_expected
    try:
        result = fuzz.run(opts, log=sys.stderr if args.json else sys.stdout)
    except plan.PlanError as e:
        raise UsageError(str(e)) from None
    except (JavaMissing, view.ViewError, files.FolderBusy) as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror}") from None
    except Exception as e:  # Spark or its JVM failed (unreachable master, dead executors): one line, no trace
        if type(e).__module__.startswith(("py4j", "pyspark")):
            raise UsageError(f"Spark failed: {str(e).strip().splitlines()[0][:300]}") from None
        raise
    if args.json:
        print(json.dumps(result.report, indent=2))
    return result.exit_code


def _coverage_sample(text: str | None) -> int | None:
    if text is None:
        return plan.COVERAGE_SAMPLE
    if text == "all":
        return None
    n = int(text) if re.fullmatch(r"\d{1,9}", text) else -1
    if not 0 <= n <= MAX_HISTORIES:
        raise UsageError(f"--coverage-sample must be a number of histories in 0..{MAX_HISTORIES:,} or all, "
                         f"not {formats.escape(text[:40])!r}")
    return n
