"""The streaming reader: same elements as json.load, proven boundaries, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miners.jsonstream import BadElement, JSONStreamError, iter_array


class Elem(msgspec.Struct):
    image_id: int
    objects: list[dict] = []


KEYS = ("image_id", "objects")


def _all(path: Path, block: int, typ=Elem) -> list:
    return [e for batch in iter_array(str(path), typ, KEYS, block_bytes=block) for e in batch]


def test_decoys_inside_strings_and_nested_objects_are_not_boundaries(tmp_path: Path) -> None:
    tricky = '}, {"image_id": 5, "objects": []}, {"image_id"'
    data = [
        {"image_id": i, "objects": [{"names": [tricky if i % 3 == 0 else "x"], "image_id": i}, {"objects": []}]}
        for i in range(300)
    ]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(data))
    for block in (64, 257, 4096, 1 << 20):
        got = _all(path, block)
        assert [e.image_id for e in got] == list(range(300))
        assert [e.objects for e in got] == [d["objects"] for d in data]


name = st.text(alphabet=st.sampled_from(list('ab}{][,": \\\u00e9')), max_size=12)
element = st.fixed_dictionaries(
    {
        "image_id": st.integers(0, 10**9),
        "objects": st.lists(st.fixed_dictionaries({"names": st.lists(name, max_size=3)}), max_size=4),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(element, max_size=40), block=st.integers(16, 600), indent=st.sampled_from([None, 1]))
def test_property_same_as_json_load(tmp_path: Path, data: list, block: int, indent) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data, indent=indent))
    got = _all(path, block)
    assert [(e.image_id, e.objects) for e in got] == [(d["image_id"], d["objects"]) for d in data]


def test_truncated_file_names_file_and_byte_offset(tmp_path: Path) -> None:
    data = [{"image_id": i, "objects": [{"names": ["cup"]}] * 5} for i in range(200)]
    text = json.dumps(data)
    path = tmp_path / "objects.json"
    path.write_bytes(text[: len(text) - 37].encode())
    with pytest.raises(JSONStreamError) as err:
        _all(path, 512)
    msg = str(err.value)
    assert str(path) in msg and "truncated" in msg and f"byte {len(text) - 37}" in msg
    last_whole = text.rindex('}, {"image_id"', 0, len(text) - 37) + 1  # end of the last element the cut left whole
    assert f"the last complete element ends at byte offset {last_whole}" in msg


def test_syntax_error_in_the_middle_names_its_offset(tmp_path: Path) -> None:
    text = json.dumps([{"image_id": i, "objects": []} for i in range(100)])
    pos = text.index('{"image_id": 50')
    broken = text[:pos] + '{"image_id": 50,, "objects": []}' + text[pos + len('{"image_id": 50, "objects": []}') :]
    path = tmp_path / "objects.json"
    path.write_text(broken)
    with pytest.raises(JSONStreamError) as err:
        _all(path, 128)
    assert broken[pos + 16] == ","
    assert str(path) in str(err.value) and f"byte offset {pos + 16}" in str(err.value)  # the second comma


def test_wrong_types_come_back_as_bad_elements(tmp_path: Path) -> None:
    data = [{"image_id": 1}, {"image_id": "two"}, {"image_id": 3}]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    got = _all(path, 1 << 20)
    assert [type(e).__name__ for e in got] == ["Elem", "BadElement", "Elem"]
    assert isinstance(got[1], BadElement) and "image_id" in got[1].error


def test_not_an_array_and_empty_array(tmp_path: Path) -> None:
    (tmp_path / "o.json").write_text('{"image_id": 1}')
    with pytest.raises(JSONStreamError, match="expected a JSON array"):
        _all(tmp_path / "o.json", 64)
    (tmp_path / "e.json").write_text("  [ ]  ")
    assert _all(tmp_path / "e.json", 64) == []
    (tmp_path / "z.json").write_text("")
    with pytest.raises(JSONStreamError, match="empty file"):
        _all(tmp_path / "z.json", 64)


def test_nested_objects_that_look_like_elements_cost_attempts_not_correctness(tmp_path: Path) -> None:
    # every nested object starts with a key that may also start a top-level element
    data = [{"image_id": i, "objects": [{"image_id": -1, "objects": []} for _ in range(30)]} for i in range(400)]
    path = tmp_path / "n.json"
    path.write_text(json.dumps(data))
    got = _all(path, 700)
    assert [e.image_id for e in got] == list(range(400))
    assert all(len(e.objects) == 30 for e in got)
