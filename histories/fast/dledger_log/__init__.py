"""The dledger_log twin: reference_impl/dledger_log (DLedger's replicated log) in Numba.

A server is the election twin's member (histories.fast.election) plus a store, a pusher and a
handler; each module mirrors the reference module of the same name over the state table
(layout.py says where every field lives); `world.run` is the kernel.

| module | mirrors |
|---|---|
| store, entry_pusher (+ _quorum_ack), entry_dispatcher, entry_handler, server | reference_impl/dledger_log/ modules of the same names |
| world (+ _nodes, _client, _observe) | reference_impl/dledger_log/world.py (the plug-in, its clients) and core/world.py's step |
| ghost, monitor (+ _steps), causes | reference_impl/dledger_log/ghost.py, spec/dledger_log.py |
| replies, network | the reply a handler gives; sending through core/network.py |
| runner, decode, crosscheck | Python side: prepare/run/result, back to reference objects, the gate |
"""
