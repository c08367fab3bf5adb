"""Counts and sizes as people write them, and the ones that must be refused."""

import pytest

from distdx.errors import DistdxError
from distdx.estimate import parse_bytes, parse_count


@pytest.mark.parametrize("text,value", [("7e9", 7_000_000_000), ("7B", 7_000_000_000), ("6.7b", 6_700_000_000),
                                        ("350M", 350_000_000), ("124439808", 124_439_808), ("1.5T", 1_500_000_000_000),
                                        (" 13 B ", 13_000_000_000), ("70k", 70_000)])
def test_parse_count(text, value) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["seven", "7X", "", "-7B", "7e99", "0", "1e9 params", "nan", "inf"])
def test_parse_count_refuses(text) -> None:
    with pytest.raises(DistdxError) as info:
        parse_count(text)
    assert info.value.code == "DX-ESTIMATE-001" and info.value.hint


@pytest.mark.parametrize("text,value", [("80GB", 80 * 10**9), ("80GiB", 80 * 2**30), ("80G", 80 * 2**30),
                                        ("81920MiB", 80 * 2**30), ("1e11", 10**11), ("40 gb", 40 * 10**9),
                                        ("512kib", 512 * 1024), ("1TB", 10**12)])
def test_parse_bytes(text, value) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["eighty", "80 GiBs", "80GX", "-1GB", "0", "1e30GB", "80 G B"])
def test_parse_bytes_refuses(text) -> None:
    with pytest.raises(DistdxError) as info:
        parse_bytes(text)
    assert info.value.code == "DX-ESTIMATE-001" and info.value.hint
