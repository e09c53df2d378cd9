"""The `rmqspec` subcommands, one module per group; rmqspec/cli.py parses the arguments and
calls them. Each `cmd_*` takes the parsed arguments and returns the exit code (rmqspec/cli.py
says what each code means); bad input raises `usage.UsageError`. Nothing here imports
rmqspec.cli: the parser tree depends on the commands, never the other way."""
