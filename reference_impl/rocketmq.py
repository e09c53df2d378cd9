"""RocketMQ's shared vocabulary (4.9.4): the codes and roles more than one protocol uses.

Each protocol answers with the members it can produce; `Protocol.branches` lists
those for coverage. Values are RocketMQ's own, so traces carry the Java numbers and
names.
"""

from __future__ import annotations

import enum

MASTER_ID = 0  # MixAll.MASTER_ID


class ResponseCode(enum.IntEnum):
    """org.apache.rocketmq.common.protocol.ResponseCode with RemotingSysResponseCode's
    first codes (the values these protocols answer with)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205


class BrokerRole(enum.Enum):
    """org.apache.rocketmq.store.config.BrokerRole"""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


class PutMessageStatus(enum.Enum):
    """org.apache.rocketmq.store.PutMessageStatus (the values these protocols produce), in Java's order."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
