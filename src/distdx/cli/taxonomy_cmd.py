"""`distdx taxonomy [ID]`: the study's taxonomy tree, or one node with its share and meaning."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit
from distdx.knowledge.taxonomy import Taxonomy, TaxonomyNode, taxonomy


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("taxonomy", help="print the taxonomy tree, or one node (S4, 4.7, R4.7, F3)")
    p.add_argument("id", nargs="?", help="a taxonomy ID; omit for the whole tree")
    add_format_option(p, ("text", "json"))
    p.set_defaults(func=run)


def _node_dict(node: TaxonomyNode) -> dict:
    return {k: v for k, v in vars(node).items() if v is not None}


def _line(node: TaxonomyNode, indent: str) -> str:
    extra = f", distributed-only {node.dist_only:.0%}" if node.dist_only is not None else ""
    return f"{indent}{node.id:<6} {node.name} ({node.share:.1%}{extra})"


def render_tree(tax: Taxonomy) -> str:
    out = []
    for stage in tax.children_of_root():
        out.append(_line(stage, ""))
        out.append("  symptoms:")
        out.extend(_line(n, "    ") for n in tax.children(stage.id, "symptom"))
        out.append("  root causes:")
        out.extend(_line(n, "    ") for n in tax.children(stage.id, "root_cause"))
    out.append("fix patterns:")
    out.extend(_line(n, "  ") for n in tax.nodes.values() if n.dimension == "fix_pattern")
    return "\n".join(out)


def render_node(tax: Taxonomy, node: TaxonomyNode) -> str:
    out = [_line(node, "")]
    if node.stage:
        out.append(f"  stage:   {tax.label(node.stage)}")
    if node.meaning:
        out.append(f"  meaning: {node.meaning}")
    if node.dimension != "stage":
        share_of = "of its stage" if node.stage else "of all issues"
        out.append(f"  share:   {node.share:.1%} {share_of}")
    else:
        for dim in ("symptom", "root_cause"):
            kids = tax.children(node.id, dim)
            out.append(f"  {dim.replace('_', ' ')}s: " + ", ".join(k.id for k in kids))
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    tax = taxonomy()
    if args.id:
        node = tax.get(args.id)
        emit(json.dumps(_node_dict(node), indent=2) if args.format == "json" else render_node(tax, node))
        return 0
    if args.format == "json":
        emit(json.dumps({"version": tax.version, "nodes": [_node_dict(n) for n in tax.nodes.values()]}, indent=2))
    else:
        emit(render_tree(tax))
    return 0
