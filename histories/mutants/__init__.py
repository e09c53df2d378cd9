"""Deliberately broken references, each breaking one rule RocketMQ (or DLedger) relies on:
what `rmqspec mutants` scores the property layers on and what the tests show the checkers
catch. They replace a reference function only while installed and never ship as protocols.

| module | holds |
|---|---|
| catalogue | every protocol's mutants, named, with the properties that should catch each |
| election | replacements of election functions (also run by the election twin, histories/fast/election/mutants.py) |
"""
