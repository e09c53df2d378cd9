"""CrossHair finds no input that breaks the HA wire codec's contracts (HA-7 at the codec level)."""

from model_checks import ha_contracts


def test_crosshair_finds_no_counterexample_in_the_wire_codec():
    ok, report = ha_contracts.run(per_condition_timeout=1.0)
    assert ok, report
