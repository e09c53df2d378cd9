"""Implementation logs from elsewhere (issue 28, part 2): what `rmqspec.log/1` refuses, with one
line naming the file, the line and the field (exit 2, never an internal error), and how the
reader keeps a log (docs/conformance.md)."""

from __future__ import annotations

import json

import pytest

from histories import impl_log
from histories import reference_logs as il
from rmqspec import cli

REAL = "leader_crash_s3"


def write(tmp_path, lines: list[dict], raw_tail: str = "") -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines) + raw_tail)
    return str(path)


def refused(capsys, path: str) -> str:
    assert cli.main(["check-trace", path]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "bad.jsonl" in err
    return err


def real() -> list[dict]:
    return il.read_real(REAL)


@pytest.mark.parametrize("field,value", [("node", ["n0"]), ("node", {"id": "n0"}), ("at", ["crash"]),
                                         ("at", {"x": 1}), ("peer", ["n1"]), ("peer", {"n": 1})])
def test_a_list_or_an_object_where_a_node_id_belongs_names_the_line_and_field(tmp_path, capsys, field, value):
    lines = real()
    k = next(i for i, d in enumerate(lines) if i and "peer" in d)
    lines[k] = dict(lines[k], **{field: value})
    err = refused(capsys, write(tmp_path, lines))
    assert f"line {k + 1}: {field} " in err


def test_a_list_in_the_headers_down_or_a_partition_group_is_refused(tmp_path, capsys):
    lines = real()
    assert "line 1: down " in refused(capsys, write(tmp_path, [dict(lines[0], down=[["n0"]])] + lines[1:]))
    part = {"t_ms": lines[1]["t_ms"], "node": None, "at": "partition", "groups": [[["n0"]], ["n1", "n2"]]}
    assert "line 2: groups[0] " in refused(capsys, write(tmp_path, lines[:1] + [part] + lines[1:]))


def test_a_node_in_two_partition_groups_is_refused(tmp_path, capsys):
    lines = real()
    part = {"t_ms": lines[1]["t_ms"], "node": None, "at": "partition", "groups": [["n0", "n1"], ["n1", "n2"]]}
    err = refused(capsys, write(tmp_path, lines[:1] + [part] + lines[1:]))
    assert "line 2: groups[1] n1 is in two partition groups" in err


def test_a_lone_surrogate_is_refused(tmp_path, capsys):
    lines = real()
    k = next(i for i, d in enumerate(lines) if i and "request" in d)
    lines[k]["request"]["group"] = "\ud800"
    err = refused(capsys, write(tmp_path, lines))  # json.dumps writes it as the escape \ud800
    assert f"line {k + 1}: request.group holds a lone UTF-16 surrogate" in err


def test_a_term_beyond_a_java_long_is_refused(tmp_path, capsys):
    lines = real()
    k = next(i for i, d in enumerate(lines) if i and "request" in d)
    lines[k]["request"]["term"] = 1 << 63
    err = refused(capsys, write(tmp_path, lines))
    assert f"line {k + 1}: request.term is beyond a Java long" in err
    lines[k]["request"]["term"] = (1 << 63) - 1  # the largest long is a term (rejected by the search, not the reader)
    impl_log.parse(enumerate(lines, 1))


@pytest.mark.parametrize("cut,message", [({"src": "n0", "dst": "n0"}, "dst a link joins two different nodes"),
                                         ({"src": ["n0"], "dst": "n1"}, "src must be one of"),
                                         ({"src": "n0", "dst": "n1", "both": "yes"}, "both must be true or false")])
def test_a_bad_cut_fact_is_refused(tmp_path, capsys, cut, message):
    lines = real()
    fact = {"t_ms": lines[1]["t_ms"], "node": None, "at": "cut", **cut}
    assert f"line 2: {message}" in refused(capsys, write(tmp_path, lines[:1] + [fact] + lines[1:]))


def test_a_log_read_from_a_file_keeps_offsets_not_its_json(tmp_path):
    """The reader keeps a few columns per line and reads a line again when the search looks
    at it (issue 28: a log's parsed JSON took 2.5 times the file)."""
    path = write(tmp_path, real())
    with open(path, "rb") as f:
        log = impl_log.read(f, "bad.jsonl")
        lines = log.lines
        assert lines.kept == [] and len(lines.offsets) == len(lines) == len(real()) - 1
        first = lines[0]
        assert first.raw == real()[1] and first.fields["state"] == real()[1]["state"]
        assert first.t_ms == real()[1]["t_ms"] and first.t == 0
        for ln in lines:  # every line read again: at most CACHED_LINES stay parsed
            ln.fields
        assert len(lines.cache) <= impl_log.CACHED_LINES


def test_an_outside_clients_request_the_model_cannot_take_is_refused(tmp_path, capsys):
    lines = il.strip(il.reference_log("dledger_log", "lockstep", 1, 120))
    header = dict(lines[0], clients="outside")
    events = [d for d in lines[1:] if d["at"] != "DLedgerClient#append"]
    k = next(i for i, d in enumerate(events) if d["at"] == "DLedgerServer#handleAppend" and "request" in d)
    events[k]["request"]["body"] = {"key": "c0-1", "length": -3}
    err = refused(capsys, write(tmp_path, [header] + events))
    assert f"line {k + 2}: request an outside client's request the model cannot take" in err
    client = dict(events[k], node="c0")
    assert "c0 is outside the world" in refused(capsys, write(tmp_path, [header, client]))
