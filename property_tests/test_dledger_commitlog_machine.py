"""Stateful Hypothesis runs of the dledger_commitlog world (3 brokers on DLedger 0.2.6 with a name
server, a producer and a consumer; every fault kind; also the fixed profile with its no-op entry),
checking every LOG and DCL property after every step."""

from __future__ import annotations

from property_tests.support.dledger_machines import WITH_OS_CRASHES, ProtocolMachine


class CommitLogMachine(ProtocolMachine):
    PROTOCOL = "dledger_commitlog"
    CONFIG = {"old_messages": 6, "mapped_file_size_commit_log": 1024}  # an upgraded store, small files
    SKIP = ("DCL-L",)  # an adversary choosing every vote timer can keep candidates colliding


class FixedCommitLogMachine(CommitLogMachine):
    CONFIG = {**CommitLogMachine.CONFIG, "dledger_version": "fixed", "enable_fast_advance_commit_index": True}


class CommitLogMachineWithOsCrashes(CommitLogMachine):
    PROFILE = WITH_OS_CRASHES


TestCommitLog = CommitLogMachine.TestCase
TestFixedCommitLog = FixedCommitLogMachine.TestCase
TestCommitLogWithOsCrashes = CommitLogMachineWithOsCrashes.TestCase
