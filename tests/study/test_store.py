"""Schema versions and migrations of the study database; upserts; bad database paths."""

from __future__ import annotations

import sqlalchemy as sa
import pytest

from distdx.errors import DistdxError
from distdx.study.store import SCHEMA_VERSION, database_url, open_store, tables


def test_new_database_is_at_the_current_version(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        assert store.version() == SCHEMA_VERSION
        names = set(sa.inspect(store.engine).get_table_names())
    assert {"issues", "comments", "events", "mine_state", "http_cache", "annotations", "adjudications"} <= names


def test_version_1_database_is_migrated_and_keeps_its_data(tmp_path):
    db = str(tmp_path / "old.db")
    with open_store(db, target_version=1) as store:
        assert store.version() == 1
        assert not sa.inspect(store.engine).has_table("annotations")
        with store.begin() as conn:
            store.upsert(conn, "issues", [dict(repo="o/r", number=1, title="t", body="b", state="closed", labels="[]",
                                               author="", comments=2, html_url="u")])
    with open_store(db) as store:
        assert store.version() == SCHEMA_VERSION
        assert sa.inspect(store.engine).has_table("annotations")
        with store.connect() as conn:
            assert conn.execute(sa.select(tables()["issues"].c.title)).scalar() == "t"
            assert conn.execute(sa.select(sa.func.count()).select_from(tables()["schema_version"])).scalar() == 1


def test_upsert_twice_is_one_row_with_the_new_values(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        row = dict(repo="o/r", comment_id=7, number=1, author="a", association="", body="first", created_at=None)
        for body in ("first", "second"):
            with store.begin() as conn:
                store.upsert(conn, "comments", [{**row, "body": body}])
        with store.connect() as conn:
            rows = conn.execute(sa.select(tables()["comments"].c.body)).all()
    assert [r[0] for r in rows] == ["second"]


def test_newer_database_is_refused(tmp_path):
    db = str(tmp_path / "new.db")
    with open_store(db) as store, store.begin() as conn:
        conn.execute(tables()["schema_version"].update().values(version=SCHEMA_VERSION + 5))
    with pytest.raises(DistdxError) as err:
        open_store(db)
    assert err.value.code == "DX-STUDY-004" and "upgrade distdx" in err.value.hint


def test_paths_and_urls(tmp_path):
    assert database_url("study.db") == "sqlite:///study.db"
    assert database_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    with pytest.raises(DistdxError) as err:
        open_store(str(tmp_path / "missing" / "s.db"))
    assert err.value.code == "DX-STUDY-002"
    with pytest.raises(DistdxError) as err:
        open_store(str(tmp_path / "absent.db"), must_exist=True)
    assert err.value.code == "DX-STUDY-005" and not (tmp_path / "absent.db").exists()
    not_db = tmp_path / "notes.db"
    not_db.write_bytes(b"this is not a sqlite file at all" * 100)
    with pytest.raises(DistdxError) as err:
        open_store(str(not_db))
    assert err.value.code == "DX-STUDY-003"
