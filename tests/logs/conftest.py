import pytest


@pytest.fixture(params=["grep", "python"])
def scanner_mode(request, monkeypatch):
    """Large inputs are pre-filtered by grep when present, else by Python; both must agree."""
    if request.param == "python":
        monkeypatch.setenv("DISTDX_NO_GREP", "1")
    else:
        monkeypatch.delenv("DISTDX_NO_GREP", raising=False)
    return request.param
