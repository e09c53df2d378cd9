"""Stateful Hypothesis runs of the dledger_log world (3 servers, two clients, every fault kind;
DLedger 0.2.6 and the fixed profile), checking every LOG property after every step. Violations
RocketMQ 4.9.4 is known to allow pass only when their cause is in the history."""

from __future__ import annotations

from property_tests.support.dledger_machines import WITH_OS_CRASHES, ProtocolMachine


class LogMachine(ProtocolMachine):
    PROTOCOL = "dledger_log"
    SKIP = ("LOG-L",)  # an adversary choosing every vote timer can keep candidates colliding


class FixedLogMachine(LogMachine):
    CONFIG = {"dledger_version": "fixed"}


class LogMachineWithOsCrashes(LogMachine):
    PROFILE = WITH_OS_CRASHES


TestLog = LogMachine.TestCase
TestFixedLog = FixedLogMachine.TestCase
TestLogWithOsCrashes = LogMachineWithOsCrashes.TestCase
