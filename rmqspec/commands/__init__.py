"""The `rmqspec` subcommands, one module per command (as pip's are): each names its command
(`NAME`), adds its parser with its options, defaults and help (`add_parser(subparsers)`) and
runs it (`run(args)`, returning the exit code; rmqspec/cli.py says what each code means). Bad
input raises `usage.UsageError`; usage.py holds the bounded flag types and what several
commands share. Nothing here imports rmqspec.cli: the parser tree is built from the commands,
never the other way."""
