"""`rmqspec fuzz` and `rmqspec shrink`: many randomized histories on Spark, and a failing
trace cut down to the fewest events that still fail (docs/fuzzing.md)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from histories import files, formats, view
from rmqspec.commands.usage import MAX_HISTORIES, UsageError, config_overrides
from spark_harness import counterexample, fuzz, plan, shrink
from spark_harness.java import JavaMissing
from spark_harness.progress import Progress


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


def cmd_fuzz(args: argparse.Namespace) -> int:
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


# `submitted` is what rmqspec/spark_submit.py passes: the master spark-submit was given
MASTER = re.compile(r"submitted|none|local(\[(\d{1,4}|\*)(,\d{1,4})?\])?|spark://[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*"
                    r"|yarn|k8s://[A-Za-z0-9.:/_-]+")


def cmd_shrink(args: argparse.Namespace) -> int:
    budget = args.budget or shrink.DEFAULT_BUDGET
    if args.out:  # refused before the work, not after it
        parent = os.path.dirname(args.out) or "."
        if not os.path.isdir(parent):
            raise UsageError(f"cannot write {args.out}: {parent} is not a directory")
    bar = Progress(budget, label="shrink", unit="replayed steps of the budget", enabled=not args.no_progress)
    try:
        entry = counterexample.from_trace(args.trace, args.out, args.property, tuple(args.imports), budget,
                                          lambda steps, best: bar.update(steps, f"best so far: {best} chosen events"))
    except IsADirectoryError as e:
        raise UsageError(f"{e.filename or args.trace}: is a directory") from None
    except OSError as e:  # the trace cannot be read, or the output cannot be written
        if e.filename == args.trace:
            raise UsageError(f"cannot read {args.trace}: {e.strerror}") from None
        raise UsageError(f"cannot write {args.out or e.filename}: {e.strerror}") from None
    except formats.FormatError as e:
        raise UsageError(str(e)) from None
    except (ValueError, KeyError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    bar.finish(entry["shrink_steps"], f"{entry['choices']} chosen events, " +
               ("1-minimal" if entry["one_minimal"] else "the budget ran out"))
    if args.json:
        print(json.dumps(entry, indent=2))
    else:
        verdict = "expected" if entry["expected"] else "unexpected"
        print(f"shrink: {entry['property']} ({verdict}) kept violated with {entry['choices']} chosen events "
              f"({entry['faults']} faults) of {entry['original_events']}; {entry['trace_steps']} steps in the trace")
        print(f"  trace: {formats.escape(entry['trace'])}" +
              (f"  picture: {formats.escape(entry['picture'])}" if entry.get("picture") else ""))
        print(f"  {entry['replay']}")
    return 0 if entry["verified"] else 1

