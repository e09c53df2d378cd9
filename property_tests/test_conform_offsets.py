"""`rmqspec conform --protocol offsets` and `rmqspec vectors --protocol offsets` (conform/offsets.py): the
reference's offset handlers behind the driver protocol agree with themselves, each deliberately broken
one is caught with a shrunk case, vectors round-trip, and a wire case decodes to the case it encodes."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings

from conform import offsets, offsets_cases
from property_tests import conform_runs
from rmqspec import cli

REFERENCE = conform_runs.reference_driver("offsets")
broken = functools.partial(conform_runs.broken_driver, "offsets")
conform_json = functools.partial(conform_runs.conform_json, protocol="offsets")


def test_the_reference_behind_the_protocol_agrees_with_itself(capsys):
    code, d = conform_json(capsys, REFERENCE, "--count", "300")
    assert code == 0 and d["ok"] and d["cases"] == 300
    assert set(d["kinds"]) == set(offsets.INPUTS), d["kinds"]


@pytest.mark.parametrize(("bug", "path"), [
    ("commit-keeps-higher", "state.broker.offsetTable"),
    ("query-not-found-when-absent", "reply.code"),
    ("sync-merges-queues", "state.broker.offsetTable"),
    ("sync-replaces-table", "state.broker.offsetTable"),
])
def test_a_broken_offset_handler_is_caught_and_shrunk(capsys, bug, path):
    code, d = conform_json(capsys, broken(bug), "--count", "3000", "--seed", "1")
    assert code == 1 and not d["ok"]
    assert path in {x["path"] for x in d["mismatch"]["differences"]}, d["mismatch"]["differences"]


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory):
    return conform_runs.write_vectors(tmp_path_factory.mktemp("vectors") / "offsets.json", "offsets", 40, 3)


def test_vectors_hold_the_edge_cases_then_generated_ones_and_the_reference_satisfies_them(capsys, vectors_file):
    conform_runs.check_vectors_round_trip(capsys, "offsets", offsets.INPUTS, vectors_file, 40)


def test_a_changed_answer_in_a_vectors_file_is_found(capsys, vectors_file, tmp_path):
    doc = json.loads(vectors_file.read_text())
    victim = next(v for v in doc["vectors"] if v["input"]["kind"] == "query_consumer_offset"
                  and v["expected"]["reply"]["offset"] is not None)
    victim["expected"]["reply"]["offset"] += 1
    bad = tmp_path / "mutated.json"
    bad.write_text(json.dumps(doc))
    assert cli.main(["vectors", "--check", str(bad)]) == 1
    out, _ = capsys.readouterr()
    assert f"{victim['id']}: reply.offset" in out


def _edge_answers() -> list[tuple[object, dict]]:
    return [(c.input, offsets.prepare(c)[1]) for c in offsets_cases.edge_cases()]


def test_commit_offset_overwrites_a_higher_stored_offset():
    """ConsumerOffsetManager#commitOffset: a lower offset replaces the stored one (only logged)."""
    _, backward = _edge_answers()[1]
    table = dict((k, dict(map(tuple, v))) for k, v in backward["state"]["broker"]["offsetTable"])
    assert table["TopicTest@please_rename_unique_group_name"][0] == 2


def test_query_consumer_offset_answers_zero_in_memory_and_not_found_in_disk():
    """ConsumerManageProcessor#queryConsumerOffset: no stored offset -> 0 when minOffset <= 0 and the first
    unit is not in disk (an empty queue included), else QUERY_NOT_FOUND (22)."""
    answers = _edge_answers()
    assert answers[4][1]["reply"] == {"code": 0, "offset": 5}
    assert answers[5][1]["reply"] == {"code": 0, "offset": 0}
    assert answers[6][1]["reply"] == {"code": 0, "offset": 0}
    assert answers[7][1]["reply"] == {"code": 22, "offset": None}


def test_sync_consumer_offset_put_all_replaces_per_key_and_keeps_the_slaves_other_keys():
    """SlaveSynchronize#syncConsumerOffset: putAll (the master's lower offset wins, a key only the slave has
    stays), then persist; a failed request, a null masterAddr or the broker itself change nothing."""
    answers = _edge_answers()
    synced = answers[11][1]
    table = dict((k, dict(map(tuple, v))) for k, v in synced["state"]["broker"]["offsetTable"])
    assert table == {"TopicB@please_rename_unique_group_name": {0: 9}, "TopicTest@group-b": {0: 2},
                     "TopicTest@please_rename_unique_group_name": {0: 3}}
    assert [o["kind"] for o in synced["outputs"]] == ["get_all_consumer_offset", "persist"]
    assert [o["kind"] for o in answers[12][1]["outputs"]] == ["get_all_consumer_offset"]
    assert answers[13][1]["outputs"] == [] and answers[14][1]["outputs"] == []


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(offsets_cases.cases(offsets.INPUTS, frozenset()))
def test_the_wire_case_decodes_to_the_case_it_encodes(case):
    wire = offsets.encode_case(case)
    assert offsets.encode_case(offsets.decode_case(wire)) == wire


def test_a_bad_wire_case_names_its_field():
    wire = offsets.encode_case(next(offsets_cases.edge_cases()))
    wire["input"]["queueId"] = "0"
    with pytest.raises(offsets.WireError, match="input.queueId must be an integer"):
        offsets.decode_case(wire)
