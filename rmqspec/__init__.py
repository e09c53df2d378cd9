"""rmqspec's command line, the top of the house.

Layering (docs/architecture.md): reference_impl <- spec <- histories <- the checkers
(property_tests.support, model_checks, spark_harness, conform) <- rmqspec.commands <- rmqspec.cli.
The CLI only parses arguments and dispatches to the commands.
"""

__version__ = "0.1.0"
