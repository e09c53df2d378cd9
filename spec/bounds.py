"""The numbers the properties' bounds are made of, from RocketMQ's and DLedger's documented defaults.

A bound is never read from the reference's constants or from its config records' defaults:
a reference whose default drifted (a NameServer expiry of 1,200 s instead of 120 s) must
break the property, not carry it along. When the user sets a value (`--config`, a scenario's
`config`), the world config records it (`WorldConfig.overrides`, by the keys the protocol's
`make_config` takes) and the bound uses that value, explicitly. docs/properties.md
("Bounds") derives each bound from these.
"""

from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, Any] = {
    # DLedgerConfig (DLedger 0.2.6)
    "heart_beat_time_interval_ms": 2000,  # heartBeatTimeIntervalMs
    "max_heart_beat_leak": 3,  # maxHeartBeatLeak
    "min_vote_interval_ms": 300,  # minVoteIntervalMs
    "max_vote_interval_ms": 1000,  # maxVoteIntervalMs
    "leadership_transfer_wait_timeout": 1000,  # leadershipTransferWaitTimeout
    "rpc_timeout_ms": 3000,  # DLedgerRpcNettyService: invokeAsync(..., 3000, ...)
    "maintainer_sleep_ms": 10,  # DLedgerLeaderElector.StateMaintainer#doWork: sleep(10)
    # RocketMQ 4.9.4: NameServer, broker, client
    "broker_channel_expired_time": 120_000,  # RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME
    "scan_not_active_broker_interval_ms": 10_000,  # NamesrvController: scheduleAtFixedRate(scan, 5, 10, SECONDS)
    "server_channel_max_idle_time_seconds": 120,  # NettyServerConfig.serverChannelMaxIdleTimeSeconds (0: off)
    "register_name_server_period": 30_000,  # BrokerConfig.registerNameServerPeriod
    "poll_name_server_interval": 30_000,  # ClientConfig.pollNameServerInterval
    "send_msg_timeout": 3000,  # DefaultMQProducer.sendMsgTimeout
    "retry_times_when_send_failed": 2,  # DefaultMQProducer.retryTimesWhenSendFailed
    "mapped_file_size_commit_log": 1 << 30,  # MessageStoreConfig.mappedFileSizeCommitLog (1 GiB)
    "sync_flush_timeout": 5000,  # MessageStoreConfig.syncFlushTimeout
    "slave_timeout": 3000,  # MessageStoreConfig.slaveTimeout (the SYNC_MASTER wait from 4.9.3 on)
    "ha_housekeeping_interval": 20_000,  # MessageStoreConfig.haHousekeepingInterval
    "ha_slave_fallbehind_max": 256 * 1024 * 1024,  # MessageStoreConfig.haSlaveFallbehindMax
    "flush_consumer_offset_interval": 5000,  # BrokerConfig.flushConsumerOffsetInterval (first after 10 s)
    "persist_consumer_offset_interval": 5000,  # ClientConfig.persistConsumerOffsetInterval
}

# HAConnection.ReadSocketService#run and HAClient#run block in selector.select(1000) between two
# checks of their housekeeping interval: a connection idle for longer is closed within this.
SELECT_MS = 1000

# What DLedgerLeaderElector hard-codes (not configurable, so never overridden).
VOTE_LATCH_BASE_MS = 2000  # maintainAsCandidate: voteLatch.await(2000 + random.nextInt(maxVoteIntervalMs))
# NettyRemotingAbstract#scanResponseTable, run every 1000 ms (NettyRemotingClient's timer): an
# async call's future expires once begin + timeout + 1000 <= now, so its failure is known by
# timeout + 2000 ms at the latest.
NETTY_SCAN_MS = 1000


def setting(w: Any, key: str) -> Any:
    """The value a bound uses: the user's override recorded in the world config, else the default."""
    return w.cfg.overrides.get(key, DEFAULTS[key])


def register_period_ms(w: Any) -> int:
    """BrokerController#start: the registration period, clamped to 10..60 s."""
    return max(10_000, min(setting(w, "register_name_server_period"), 60_000))
