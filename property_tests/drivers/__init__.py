"""Drivers for `rmqspec conform` that the tests start as processes (docs/conformance.md).

`election_reference` puts the reference itself behind the protocol; `election_broken`
is the reference with one deliberate bug that conform must catch and shrink;
`misbehaving` speaks the protocol badly in one chosen way. Test code only: nothing
imports these modules, the tests run them with `python -m`.
"""
