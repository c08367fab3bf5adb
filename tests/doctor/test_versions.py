from distdx.doctor.versions import major_minor, marker_environment, parse_version, requirement_on, satisfies


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


def test_pre_post_and_local_releases_follow_pep_440():
    assert satisfies("2.1.0rc1", ">=2.1") is False  # a release candidate comes before its release
    assert satisfies("2.6.0a0+git1234", ">=2.6") is False  # a torch nightly before 2.6 is out
    assert satisfies("2.6.0a0+git1234", ">=2.5")
    assert satisfies("2.0.0.post1", "==2.0.0") is False
    assert satisfies("2.0.0.post1", ">=2.0.0")
    assert satisfies("2.0.0.post1", ">2.0.0") is False  # PEP 440: > V excludes post-releases of V
    assert satisfies("2.13.0+cpu", "==2.13.0")  # a local build meets the public version
    assert satisfies("2.13.0+cpu", "==2.13.0+cu121") is False
    assert satisfies("not-a-version", ">=1") is None


def test_markers_decide_whether_a_requirement_applies():
    lines = ('triton==3.1.0; python_version < "3.13"', 'triton==3.2.0; python_version >= "3.13"',
             'numpy>=1.0; sys_platform == "win32"', 'numpy<2; sys_platform != "win32"')
    assert requirement_on(lines, "triton", marker_environment("3.12.4")) == "==3.1.0"
    assert requirement_on(lines, "triton", marker_environment("3.13.1")) == "==3.2.0"
    assert requirement_on(lines, "numpy", {**marker_environment("3.12.4"), "sys_platform": "linux"}) == "<2"
