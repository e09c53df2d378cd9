"""`rmqspec conform --protocol nameserver` and `rmqspec vectors --protocol nameserver`
(conform/nameserver.py): the reference's RouteInfoManager behind the driver protocol agrees with
itself, each deliberately broken one is caught with a shrunk case, vectors round-trip, a wire case
decodes to the case it encodes, and the HashMap order onChannelDestroy's scans follow."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings

from conform import nameserver, nameserver_cases
from reference_impl.nameserver import route_info as ri
from rmqspec import cli

PY = sys.executable
REFERENCE = f"{PY} -m property_tests.drivers.nameserver_reference"


def broken(bug: str) -> str:
    return f"{PY} -m property_tests.drivers.nameserver_broken --bug {bug}"


def conform_json(capsys, driver: str, *more: str) -> tuple[int, dict]:
    code = cli.main(["conform", "--protocol", "nameserver", "--driver", driver, "--json", *more])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_the_reference_behind_the_protocol_agrees_with_itself(capsys):
    code, d = conform_json(capsys, REFERENCE, "--count", "300")
    assert code == 0 and d["ok"] and d["cases"] == 300
    assert set(d["kinds"]) == set(nameserver.INPUTS), d["kinds"]


@pytest.mark.parametrize(("bug", "path"), [
    ("slave-creates-queues", "state.routeInfo.topicQueueTable"),
    ("version-ignored", "state.routeInfo.topicQueueTable"),
    ("unregister-by-address", "state.routeInfo.brokerAddrTable"),
    ("route-without-filters", "reply.filterServerTable"),
])
def test_a_broken_route_info_manager_is_caught_and_shrunk(capsys, bug, path):
    code, d = conform_json(capsys, broken(bug), "--count", "3000", "--seed", "1")
    assert code == 1 and not d["ok"]
    assert path in {x["path"] for x in d["mismatch"]["differences"]}, d["mismatch"]["differences"]


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vectors") / "nameserver.json"
    assert cli.main(["vectors", "--protocol", "nameserver", "--out", str(path), "--count", "40", "--seed", "3",
                     "--json"]) == 0
    return path


def test_vectors_hold_the_edge_cases_then_generated_ones_and_the_reference_satisfies_them(capsys, vectors_file):
    doc = json.loads(vectors_file.read_text())
    assert doc["protocol"] == "nameserver"
    ids = [v["id"] for v in doc["vectors"]]
    assert ids[0].startswith("edge-") and sum(i.startswith("random-") for i in ids) == 40
    assert {v["requires"][0] for v in doc["vectors"]} == set(nameserver.INPUTS)
    assert cli.main(["vectors", "--check", str(vectors_file)]) == 0
    capsys.readouterr()
    code, d = conform_json(capsys, REFERENCE, "--vectors", str(vectors_file))
    assert code == 0 and d["cases"] == len(doc["vectors"])


def test_a_changed_answer_in_a_vectors_file_is_found(capsys, vectors_file, tmp_path):
    doc = json.loads(vectors_file.read_text())
    victim = next(v for v in doc["vectors"] if v["input"]["kind"] == "register_broker"
                  and v["expected"]["reply"]["masterAddr"] is not None)
    victim["expected"]["reply"]["masterAddr"] = None
    bad = tmp_path / "mutated.json"
    bad.write_text(json.dumps(doc))
    assert cli.main(["vectors", "--check", str(bad)]) == 1
    out, _ = capsys.readouterr()
    assert f"{victim['id']}: reply.masterAddr" in out


def test_edge_cases_answer_a_slave_with_its_master_and_a_missing_topic_with_null():
    answers = [nameserver.prepare(c)[1] for c in nameserver_cases.edge_cases()]
    kinds = [c.input for c in nameserver_cases.edge_cases()]
    slave_with_master = answers[2]["reply"]
    assert slave_with_master == {"haServerAddr": "10.0.1.1:10912", "masterAddr": "10.0.1.1:10911"}
    assert answers[1]["reply"] == {"haServerAddr": None, "masterAddr": None}  # no master yet
    missing = [a for a, k in zip(answers, kinds) if isinstance(k, nameserver.GetRoute) and k.topic == "TopicNone"]
    assert missing and missing[0]["reply"] is None


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(nameserver_cases.cases(nameserver.INPUTS, frozenset()))
def test_the_wire_case_decodes_to_the_case_it_encodes(case):
    wire = nameserver.encode_case(case)
    back = nameserver.decode_case(wire)
    assert back.input == case.input and back.now == case.now
    assert nameserver.encode_route_info(back.rim) == nameserver.encode_route_info(case.rim)


def test_a_bad_wire_case_names_its_field():
    wire = nameserver.encode_case(next(nameserver_cases.edge_cases()))
    wire["input"]["brokerId"] = "0"
    with pytest.raises(nameserver.WireError, match="input.brokerId must be an integer"):
        nameserver.decode_case(wire)


# --- Java's HashMap order, where onChannelDestroy's scans depend on it ---


def test_java_string_hash_and_hash_map_order():
    """String#hashCode of known strings; a HashMap(32) of these two clusters iterates cluster-2 first."""
    assert ri.java_string_hash("hello") == 99162322
    assert ri.java_string_hash("DefaultCluster") == 1874216089
    assert ri.java_hash_map_order(["DefaultCluster", "cluster-2"], 32) == ["cluster-2", "DefaultCluster"]


def test_a_broker_name_in_two_clusters_leaves_the_first_in_java_order():
    """Found by conform against RocketMQ 4.9.4: broker-a registered under DefaultCluster, then under
    cluster-2; its channel closes: onChannelDestroy removes the name from the first cluster set in
    the HashMap's order that holds it (cluster-2) and stops, so DefaultCluster keeps it."""
    rim = ri.RouteInfo()
    for cluster in ("DefaultCluster", "cluster-2"):
        rim, _, _ = ri.register_broker(rim, cluster, "10.0.1.2:10911", "broker-a", 0, "10.0.1.2:10912",
                                       ri.TopicConfigSerializeWrapper(), None, "ch", 1)
    rim = ri.on_channel_destroy(rim, "", "ch")
    assert dict(rim.cluster_addr_table.items()) == {"DefaultCluster": frozenset({"broker-a"})}
