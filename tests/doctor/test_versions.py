from distdx.doctor.versions import major_minor, parse_version, requirement_on, satisfies


def test_parse_and_compare():
    assert parse_version("2.13.0+cpu") == (2, 13, 0)
    assert parse_version("535.104.05") == (535, 104, 5)
    assert parse_version("abc") is None
    assert major_minor("12.4.131") == "12.4"


def test_specifiers():
    assert satisfies("2.5.1", ">=2.1,<3")
    assert satisfies("2.5.1", "<2.3") is False
    assert satisfies("3.1.0", "==3.1.*")
    assert satisfies("3.2.0", "==3.1.*") is False
    assert satisfies("1.4.2", "~=1.2")
    assert satisfies("2.0", "~=1.2") is False
    assert satisfies("2.0.1", "!=2.0.1") is False
    assert satisfies("2.0", "=>2") is None


def test_requirement_on_ignores_extras():
    lines = ('triton==3.1.0; platform_system == "Linux"', 'torch>=1.0; extra == "dev"', "Torch (>=2.1)")
    assert requirement_on(lines, "triton") == "==3.1.0"
    assert requirement_on(lines, "torch") == ">=2.1"
    assert requirement_on(lines, "numpy") is None
