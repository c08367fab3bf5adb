"""A study database mined once from the loopback GitHub server, copied for each test that needs it."""

from __future__ import annotations

import shutil

import pytest

from distdx.study.github import GitHubClient
from distdx.study.mine import MineOptions, StoreCache, mine
from distdx.study.store import open_store

from .fakegithub import FakeGitHub, Server, make_repo


@pytest.fixture(scope="session")
def mined_source(tmp_path_factory):
    path = tmp_path_factory.mktemp("mined") / "study.db"
    data = make_repo(n=40)
    with Server(FakeGitHub(data)) as gh, open_store(str(path)) as store, \
            GitHubClient(gh.url, None, cache=StoreCache(store), sleep=lambda s: None) as client:
        mine(store, client, MineOptions("acme/widgets", per_page=10))
    return path, data


@pytest.fixture
def mined_db(mined_source, tmp_path):
    path, data = mined_source
    copy = tmp_path / "study.db"
    shutil.copy(path, copy)
    return str(copy), data
