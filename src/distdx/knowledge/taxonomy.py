"""The study's taxonomy as typed, cached data (see ``taxonomy.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from distdx.paths import cached
from distdx.yamlio import load_yaml

from distdx.errors import DistdxError

DIMENSIONS = ("stage", "symptom", "root_cause", "fix_pattern")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class TaxonomyNode:
    id: str
    dimension: str  # one of DIMENSIONS
    name: str
    share: float
    stage: str | None = None  # parent stage for symptoms and root causes
    meaning: str | None = None
    dist_only: float | None = None


@dataclass(frozen=True)
class Taxonomy:
    version: int
    nodes: dict[str, TaxonomyNode]

    def ids(self, dimension: str) -> list[str]:
        return [n.id for n in self.nodes.values() if n.dimension == dimension]

    def get(self, node_id: str) -> TaxonomyNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise DistdxError(
                "DX-TAX-001",
                f"unknown taxonomy ID {node_id!r}",
                why="IDs are those of the study: S1..S5, 1.1..5.11, R1.1..R5.6, F1..F6",
                hint="run `distdx taxonomy` to list them",
            ) from None

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def children_of_root(self) -> list[TaxonomyNode]:
        return [n for n in self.nodes.values() if n.dimension == "stage"]

    def children(self, stage_id: str, dimension: str) -> list[TaxonomyNode]:
        return [n for n in self.nodes.values() if n.dimension == dimension and n.stage == stage_id]

    def stage_of(self, node_id: str) -> str | None:
        node = self.nodes.get(node_id)
        if node is None:
            return None
        return node.id if node.dimension == "stage" else node.stage

    def prior(self, node_id: str) -> float:
        """The study's share of all issues for a stage, symptom or root cause; fix patterns as given."""
        node = self.nodes[node_id]
        if node.dimension in ("stage", "fix_pattern"):
            return node.share
        return node.share * self.nodes[node.stage].share  # type: ignore[index]

    def label(self, node_id: str) -> str:
        node = self.nodes.get(node_id)
        return f"{node_id} {node.name}" if node else node_id


def _parse(data: dict) -> Taxonomy:
    nodes: dict[str, TaxonomyNode] = {}
    sections = (("stages", "stage"), ("symptoms", "symptom"), ("root_causes", "root_cause"),
                ("fix_patterns", "fix_pattern"))
    for section, dimension in sections:
        for node_id, spec in data[section].items():
            node_id = str(node_id)
            nodes[node_id] = TaxonomyNode(
                id=node_id,
                dimension=dimension,
                name=spec["name"],
                share=float(spec["share"]),
                stage=spec.get("stage"),
                meaning=spec.get("meaning"),
                dist_only=spec.get("dist_only"),
            )
    return Taxonomy(version=int(data.get("version", 1)), nodes=nodes)


@lru_cache(maxsize=1)
def taxonomy() -> Taxonomy:
    raw = resources.files("distdx.knowledge").joinpath("taxonomy.yaml").read_bytes()
    return _parse(cached("taxonomy", [raw], lambda: load_yaml(raw.decode("utf-8"))))
