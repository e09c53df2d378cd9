"""What every twin shares, once: the state table and its core layout, the seeded chooser loop's parts, the
generic faults and the step's bookkeeping, MT19937, coverage and the distinct-state sketch, results, the
kernels' cache and the cross-check's comparison. Mirrors reference_impl/core.

| module | what | reference |
|---|---|---|
| table | the state table `S`: one int64 row of slot pointers; `accessor` views a slot as an array | (the reference's records) |
| layout | core slots, config columns, world counters, event and fault kinds, capacities' stop codes | core/world.py |
| mt | CPython's MT19937, bit for bit | (CPython's random) |
| chooser | the seeded chooser's draws: fault or event, which one, a tick's draw, lateness | core/chooser.py |
| schedule | enabled network events, their horizon, the fault kinds and events a profile allows | core/schedule.py |
| network | RPCs and envelopes in flight: open, reply, close, refuse | core/network.py |
| outputs | a handler's outputs (sends, responses, observations) as rows | core/transitions.py (route) |
| transitions | a step's bookkeeping (begin, record, end), ticks, RPC failure, the generic faults, calm | core/transitions.py |
| coverage, sketch | actions, branches, roles and distinct states, counted by the kernel | spark_harness/coverage.py, sketch.py |
| results | FastResult, FastViolation, Unsupported, CapacityError | |
| cache | where Numba keeps the compiled kernels (digest of the package tree, owned folders) | |
| crosscheck | comparing a twin's history with the reference's | |
"""
