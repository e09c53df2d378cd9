"""Running histories: the runner (a world, a chooser, the monitor and a step budget),
traces (`rmqspec.trace/1`), scenario files, and the readable timeline.

It sits between the spec and the checkers: `property_tests`, `model_checks` and
`spark_harness` run histories through it, and the `rmqspec` CLI on top of them.
"""
