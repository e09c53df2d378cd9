"""Expected answer versus the driver's: the fields that differ, by path.

Replies and states are compared field by field (`state.memberState.currVoteFor`), over
the fields the expected answer has;
outputs as a multiset (the order in which one handler call sends to its peers, or
reports a role change before or after a send, is nothing a peer can observe), so a
difference there lists what is missing and what is extra.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class Difference:
    path: str
    expected: Any
    got: Any

    def line(self, name: Callable[[str, Any], str | None] = lambda path, v: None) -> str:
        """One readable line; `name(path, value)` may name a value (a result code's Java name)."""
        if self.path == "outputs":
            return (f"outputs: missing {_text(self.expected) if self.expected else 'nothing'}, "
                    f"extra {_text(self.got) if self.got else 'nothing'}")
        expected, got = _named(self.path, self.expected, name), _named(self.path, self.got, name)
        return f"{self.path}: expected {expected}, got {got}"


def _text(v: Any) -> str:
    return json.dumps(v, sort_keys=False)


def _named(path: str, v: Any, name: Callable[[str, Any], str | None]) -> str:
    label = name(path, v)
    return _text(v) + (f" ({label})" if label else "")


def differences(expected: dict, got: dict) -> list[Difference]:
    """Where `got` (a driver's answer) differs from `expected`; [] when they agree."""
    if "error" in got:
        return [Difference("error", None, got["error"])]
    out: list[Difference] = []
    _diff("reply", expected["reply"], got["reply"], out)
    missing, extra = _multiset_diff(expected["outputs"], got["outputs"])
    if missing or extra:
        out.append(Difference("outputs", missing, extra))
    _diff("state", expected["state"], got["state"], out)
    return out


def _diff(path: str, a: Any, b: Any, out: list[Difference]) -> None:
    """Fields the driver reports beyond the expected ones (a Java response's group and ids,
    say) are not compared: the protocol names what it checks."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            _diff(f"{path}.{k}", a[k], b.get(k, ABSENT), out)
    elif a != b or type(a) is not type(b):
        out.append(Difference(path, a, b))


ABSENT = "(absent)"


def _multiset_diff(a: list, b: list) -> tuple[list, list]:
    key = lambda x: json.dumps(x, sort_keys=True)  # noqa: E731
    ca, cb = Counter(map(key, a)), Counter(map(key, b))
    missing = [json.loads(k) for k in sorted((ca - cb).elements())]
    extra = [json.loads(k) for k in sorted((cb - ca).elements())]
    return missing, extra
