"""The study database: mined issues, their timelines, annotations and adjudications.

One SQLAlchemy database; SQLite when given a path, any SQLAlchemy URL otherwise (e.g.
``postgresql+psycopg://...``). The ``schema_version`` table holds the version the data is at;
:data:`MIGRATIONS` brings an older database forward step by step, inside one transaction each.
Every write is an upsert keyed on GitHub's own identifiers, so writing the same page or
timeline twice leaves one row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from distdx.errors import DistdxError

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy.engine import Connection, Engine

SCHEMA_VERSION = 2


def _tables():
    """Table definitions, built on first use so that importing this module stays cheap."""
    import sqlalchemy as sa

    md = sa.MetaData()
    t = {}
    t["schema_version"] = sa.Table("schema_version", md, sa.Column("version", sa.Integer, nullable=False))
    t["issues"] = sa.Table(
        "issues", md,
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("title", sa.Text, nullable=False, default=""),
        sa.Column("body", sa.Text, nullable=False, default=""),
        sa.Column("state", sa.String(20), nullable=False, default=""),
        sa.Column("labels", sa.Text, nullable=False, default="[]"),  # JSON list of label names
        sa.Column("author", sa.String(200), nullable=False, default=""),
        sa.Column("comments", sa.Integer, nullable=False, default=0),
        sa.Column("created_at", sa.String(40)),
        sa.Column("updated_at", sa.String(40)),
        sa.Column("closed_at", sa.String(40)),
        sa.Column("html_url", sa.Text, nullable=False, default=""),
        # the issue's updated_at when its timeline was last stored; NULL: not yet
        sa.Column("timeline_synced", sa.String(40)),
        # case-format fields of an issue imported from a labelled file rather than mined
        sa.Column("case_json", sa.Text),
    )
    t["comments"] = sa.Table(
        "comments", md,
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("comment_id", sa.BigInteger, primary_key=True),
        sa.Column("number", sa.Integer, nullable=False, index=True),
        sa.Column("author", sa.String(200), nullable=False, default=""),
        sa.Column("association", sa.String(40), nullable=False, default=""),
        sa.Column("body", sa.Text, nullable=False, default=""),
        sa.Column("created_at", sa.String(40)),
    )
    t["events"] = sa.Table(
        "events", md,
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("event_key", sa.String(120), primary_key=True),
        sa.Column("event", sa.String(60), nullable=False),
        sa.Column("created_at", sa.String(40)),
        sa.Column("source_repo", sa.String(200)),  # cross-referenced: where the reference came from
        sa.Column("source_number", sa.Integer),
        sa.Column("source_is_pr", sa.Boolean, nullable=False, default=False),
        sa.Column("commit_id", sa.String(60)),
    )
    t["mine_state"] = sa.Table(
        "mine_state", md,
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("phase", sa.String(20), nullable=False),  # list | timelines | done
        sa.Column("next_url", sa.Text),
        sa.Column("since", sa.String(40)),  # the run's lower bound on updated_at
        sa.Column("high_water", sa.String(40)),  # largest updated_at listed in the run
        sa.Column("cursor", sa.String(40)),  # high_water of the last complete run: next --since
        sa.Column("params", sa.Text, nullable=False, default="{}"),
    )
    t["http_cache"] = sa.Table(
        "http_cache", md,
        sa.Column("url", sa.Text, primary_key=True),
        sa.Column("etag", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("next_url", sa.Text),
        sa.Column("last_url", sa.Text),
    )
    # version 2: labelling
    t["annotations"] = sa.Table(
        "annotations", md,
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("annotator", sa.String(100), primary_key=True),
        sa.Column("round", sa.Integer, nullable=False, default=1),
        sa.Column("labels", sa.Text, nullable=False),  # JSON LabelSet.to_dict()
        sa.Column("note", sa.Text, nullable=False, default=""),
        sa.Column("created_at", sa.String(40), nullable=False),
    )
    t["adjudications"] = sa.Table(
        "adjudications", md,
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("labels", sa.Text, nullable=False),
        sa.Column("source", sa.String(20), nullable=False),  # agreed | adjudicated
        sa.Column("adjudicator", sa.String(100), nullable=False, default=""),
        sa.Column("note", sa.Text, nullable=False, default=""),
        sa.Column("created_at", sa.String(40), nullable=False),
    )
    return md, t


_CACHE: dict[str, object] = {}


def tables() -> dict:
    if "tables" not in _CACHE:
        _CACHE["metadata"], _CACHE["tables"] = _tables()
    return _CACHE["tables"]  # type: ignore[return-value]


def _create(names: tuple[str, ...]) -> Callable[["Connection"], None]:
    def step(conn: "Connection") -> None:
        for name in names:
            tables()[name].create(conn, checkfirst=True)
    return step


# MIGRATIONS[i] brings a database from version i to version i + 1.
MIGRATIONS: tuple[Callable[["Connection"], None], ...] = (
    _create(("schema_version", "issues", "comments", "events", "mine_state", "http_cache")),
    _create(("annotations", "adjudications")),
)
assert len(MIGRATIONS) == SCHEMA_VERSION


def database_url(db: str) -> str:
    """A path becomes a SQLite URL; anything with ``://`` is already an SQLAlchemy URL."""
    if "://" in db:
        return db
    return f"sqlite:///{Path(db).expanduser()}"


@dataclass
class Store:
    """An open study database. Use :func:`open_store`; close it with :meth:`close`."""

    engine: "Engine"
    url: str

    @property
    def t(self) -> dict:
        return tables()

    def begin(self):
        return self.engine.begin()

    def connect(self):
        return self.engine.connect()

    def version(self) -> int:
        return _current_version(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -----------------------------------------------------------------------------
    def upsert(self, conn: "Connection", table: str, rows: Iterable[dict]) -> int:
        return upsert(conn, self.t[table], list(rows))

    # -- small shared reads -----------------------------------------------------------------
    def repos(self) -> list[str]:
        import sqlalchemy as sa

        issues = self.t["issues"]
        with self.connect() as conn:
            return [r[0] for r in conn.execute(sa.select(issues.c.repo).distinct().order_by(issues.c.repo))]


def _current_version(engine: "Engine") -> int:
    import sqlalchemy as sa

    if not sa.inspect(engine).has_table("schema_version"):
        return 0
    with engine.connect() as conn:
        row = conn.execute(sa.select(sa.func.max(tables()["schema_version"].c.version))).scalar()
    return int(row or 0)


def open_store(db: str, *, target_version: int = SCHEMA_VERSION, must_exist: bool = False) -> Store:
    """Open (creating or migrating as needed) the study database at a path or SQLAlchemy URL."""
    try:
        import sqlalchemy as sa
    except ImportError:
        raise DistdxError("DX-STUDY-001", "the study needs SQLAlchemy",
                          hint="pip install 'distdx[study]'") from None
    url = database_url(db)
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        path = Path(url[len("sqlite:///"):])
        if must_exist and not path.is_file():
            raise DistdxError("DX-STUDY-005", f"no study database at {db}",
                              hint="mine one first (`distdx study mine OWNER/REPO --db PATH`) or import labels "
                                   "(`distdx study annotate --import FILE --db PATH`)")
        parent = path.parent
        if not parent.is_dir():
            raise DistdxError("DX-STUDY-002", f"cannot create the study database {db}: "
                              f"folder {parent} does not exist", hint="create the folder or pick another path")
    try:
        engine = sa.create_engine(url, future=True)
        current = _current_version(engine)
    except ImportError as e:  # a dialect's driver (psycopg, ...) is missing
        raise DistdxError("DX-STUDY-003", f"cannot open {url.split('://')[0]} database: {e}",
                          hint="install the database driver SQLAlchemy names, or use a SQLite path") from None
    except sa.exc.SQLAlchemyError as e:
        raise DistdxError("DX-STUDY-003", f"cannot open the study database {db}",
                          why=str(e.orig if hasattr(e, "orig") else e).splitlines()[0],
                          hint="check the path or URL; a SQLite path must be a database file") from None
    if current > SCHEMA_VERSION:
        engine.dispose()
        raise DistdxError("DX-STUDY-004", f"the study database {db} has schema version {current}, "
                          f"newer than this distdx understands ({SCHEMA_VERSION})",
                          hint="upgrade distdx, or use a new database")
    for version in range(current, target_version):
        with engine.begin() as conn:
            MIGRATIONS[version](conn)
            conn.execute(tables()["schema_version"].delete())
            conn.execute(tables()["schema_version"].insert().values(version=version + 1))
    return Store(engine=engine, url=url)


def upsert(conn: "Connection", table, rows: list[dict]) -> int:
    """Insert rows, or update the row with the same primary key: the same input twice is one row."""
    if not rows:
        return 0
    keys = [c.name for c in table.primary_key.columns]
    dialect = conn.dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        for row in rows:
            stmt = insert(table).values(**row)
            update = {k: stmt.excluded[k] for k in row if k not in keys}
            stmt = stmt.on_conflict_do_update(index_elements=keys, set_=update) if update \
                else stmt.on_conflict_do_nothing(index_elements=keys)
            conn.execute(stmt)
        return len(rows)
    import sqlalchemy as sa

    for row in rows:  # portable path for other databases
        where = sa.and_(*(table.c[k] == row[k] for k in keys))
        if conn.execute(sa.select(sa.func.count()).select_from(table).where(where)).scalar():
            conn.execute(table.update().where(where).values(**{k: v for k, v in row.items() if k not in keys}))
        else:
            conn.execute(table.insert().values(**row))
    return len(rows)


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
