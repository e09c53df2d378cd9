"""The election twin: reference_impl/election (DLedger's leader election) in Numba.

Each module mirrors the reference module of the same name over the state table (layout.py says
where every field lives); `world.run` is the kernel, the reference's histories.runner loop.

| module | mirrors |
|---|---|
| member_state, leader_elector (+ _transfer), server | reference_impl/election/member_state.py, leader_elector.py, server.py |
| world (+ _observe) | reference_impl/election/world.py (the plug-in) and core/world.py's step |
| ghost, monitor | reference_impl/election/ghost.py, spec/election.py |
| replies, network | the reply a handler gives; sending through core/network.py |
| mutants | test-only broken members (histories/mutants/election.py), compiled out of production |
| runner, decode, crosscheck, explore | Python side: prepare/run/result, back to reference objects, the gate, exhaustive search |
"""
