import json

import pytest

from distdx import jsonio


@pytest.mark.parametrize("text, what", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"a": ' + "9" * 5000 + "}", "4,300 digits"),
])
def test_what_json_loads_reports_outside_its_own_error_is_a_decode_error(text, what):
    with pytest.raises(json.JSONDecodeError) as e:
        jsonio.loads(text)
    assert what in e.value.msg


def test_ordinary_json_and_a_hooks_own_errors_pass_through():
    assert jsonio.loads(b'{"a": [1, 2]}') == {"a": [1, 2]}

    def hook(pairs):
        raise ValueError("duplicate key")
    with pytest.raises(ValueError, match="duplicate key"):
        jsonio.loads('{"a": 1}', object_pairs_hook=hook)
