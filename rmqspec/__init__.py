"""rmqspec's application layer: histories, traces, scenario files and the CLI.

Layering (docs/architecture.md): reference_impl <- spec <- rmqspec.{runner,trace,
scenario_file} <- property_tests / model_checks / spark_harness <- rmqspec.commands <- rmqspec.cli.
The CLI only parses arguments and dispatches to the commands.
"""

__version__ = "0.1.0"
