"""The knowledge graph: throttled evidence, merged entities, relations, citations, GraphML."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from arkai.core import canonjson
from arkai.model.evidence import EvidenceLine
from arkai.search.graph import GRAPHML_NS, GraphItem, build_graph, node_id, throttle, to_graphml

A, B, C = "a" * 16, "b" * 16, "c" * 16


def ev(eid: str, quote: str, conf: float, *, status: str = "resolved", review: str = "") -> Any:
    span = None
    if status != "unresolved":
        span = {
            "artifact": "transcript.md",
            "utf8_byte_offset": [0, len(quote)],
            "slice_sha256": "sha256:" + hashlib.sha256(quote.encode()).hexdigest(),
        }
    d: dict[str, Any] = {
        "id": eid,
        "content_id": A,
        "claim": quote,
        "quote": quote,
        "quote_sha256": "sha256:" + hashlib.sha256(quote.encode()).hexdigest(),
        "status": status,
        "resolution": {"method": "exact", "match_count": 1, "match_rank": 1},
        "span": span,
        "confidence": conf,
        "extractor": "extract_claims",
        "ts": "",
    }
    if review:
        d["review"] = {"status": review}
    return EvidenceLine.from_dict(d)


def ent(name: str, etype: str, mentions: int) -> dict[str, Any]:
    return {"name": name, "type": etype, "mentions": [{}] * mentions}


def items() -> list[GraphItem]:
    return [
        GraphItem(
            content_id=A,
            title="Beekeeping in Lisbon",
            path="library/talks/Beekeeping in Lisbon (x)",
            content_type="talks",
            url="https://example.org/bees",
            tags=["bees", "city"],
            text="Amara Okafor runs HiveSense in Lisbon.",
            evidence=[
                ev("1" * 16, "Amara Okafor founded the institute.", 0.9),
                ev("2" * 16, "Amara Okafor said so.", 0.7),  # below the threshold
                ev("3" * 16, "Amara Okafor, rejected.", 0.95, review="rejected"),
                ev("4" * 16, "Amara Okafor, ambiguous.", 0.95, status="ambiguous"),
                ev("5" * 16, "HiveSense boards weigh hives.", 0.85),
            ],
            entities=[
                ent("Amara Okafor", "person", 3),
                ent("HiveSense", "org", 6),
                ent("Lisbon", "location", 2),
            ],
            high_topics=[("hives", 0.3), ("varroa", 0.2)],
        ),
        GraphItem(
            content_id=B,
            title="Hives",
            path="library/notes/Hives (y)",
            content_type="notes",
            tags=["bees"],
            text="Rewatched Beekeeping in Lisbon, see https://example.org/bees twice: "
            "https://example.org/bees",
            entities=[ent("amara  okafor", "Person", 1), ent("HIVESENSE", "org", 1)],
            high_topics=[("firmware", 0.4)],
        ),
        GraphItem(
            content_id=C,
            title="Gardening",
            path="library/notes/Gardening (z)",
            text="Hives is not cited: titles under eight characters are not looked for.",
            entities=[ent("Lisbon", "location", 1)],
            high_topics=[("varroa", 0.1)],
        ),
    ]


def edges_of(graph: Any, kind: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["source"], e["target"]): e for e in graph.edges if e["type"] == kind}


def test_throttle_threshold_and_cap() -> None:
    lines = [ev(f"{n:016x}", f"claim {n}", 0.8 + n / 1000) for n in range(51)]
    lines.append(ev("f" * 16, "low", 0.7))
    kept = throttle(lines)
    assert len(kept) == 50
    ids = {ln.id for ln in kept}
    assert f"{0:016x}" not in ids  # the 51st (least confident) is dropped
    assert "f" * 16 not in ids  # 0.7 is never evidence
    assert kept[0].confidence == pytest.approx(0.85)
    assert throttle(lines, cap=3)[-1].id == f"{48:016x}"


def test_mentions_evidence_is_throttled() -> None:
    g = build_graph(items())
    mentions = edges_of(g, "MENTIONS")
    amara = node_id("entity", "person", "amara okafor")
    edge = mentions[(node_id("content", A), amara)]
    assert edge["weight"] == 3.0
    assert edge["evidence"] == ["1" * 16]  # not the 0.7, rejected or ambiguous claims
    hive = mentions[(node_id("content", A), node_id("entity", "org", "hivesense"))]
    assert hive["evidence"] == ["5" * 16] and hive["weight"] == 6.0


def test_entities_merge_across_items() -> None:
    g = build_graph(items())
    entities = [n for n in g.nodes if n["type"] == "Entity"]
    amara = [n for n in entities if n["label"].lower() == "amara okafor"]
    assert len(amara) == 1 and amara[0]["entity_type"] == "person"
    assert amara[0]["label"] == "Amara Okafor"  # tie: the first spelling in sort order
    assert len(entities) == 3


def test_tags_related_cites_topics() -> None:
    g = build_graph(items())
    ca, cb, cc = (node_id("content", x) for x in (A, B, C))
    tagged = edges_of(g, "TAGGED_WITH")
    assert set(tagged) == {(ca, "tag:bees"), (ca, "tag:city"), (cb, "tag:bees")}
    related = edges_of(g, "RELATED_TO")
    # A and B share two entities; A and C share a high topic; B and C share nothing.
    assert (ca, cb) in related and (ca, cc) in related
    assert (cb, cc) not in related and (cb, ca) not in related
    # Jaccard of entity-and-topic sets: A {amara, hivesense, lisbon, hives, varroa},
    # B {amara, hivesense, firmware}: 2 / 6.
    assert related[(ca, cb)]["weight"] == pytest.approx(2 / 6, abs=1e-6)
    assert related[(ca, node_id("topic", "hives"))]["weight"] == pytest.approx(0.3)
    cites = edges_of(g, "CITES")
    assert cites == {
        (cb, ca): {"source": cb, "target": ca, "type": "CITES", "weight": 3.0, "evidence": []}
    }
    topics = {n["label"] for n in g.nodes if n["type"] == "Topic"}
    assert topics == {"hives", "varroa", "firmware"}


def test_deterministic_and_order_independent() -> None:
    a = canonjson.dumps(build_graph(items()).to_dict())
    b = canonjson.dumps(build_graph(items()[::-1]).to_dict())
    assert a == b
    assert to_graphml(build_graph(items())) == to_graphml(build_graph(items()[::-1]))


def test_node_ids_are_nmtokens() -> None:
    assert node_id("content", A) == f"content:{A}"
    weird = node_id("tag", "machine learning/AI")
    assert " " not in weird and "/" not in weird
    assert weird != node_id("tag", "machine_learning_AI")


def test_graphml_parses(tmp_path: Path) -> None:
    g = build_graph(items())
    data = to_graphml(g)
    root = ET.fromstring(data)
    ns = {"g": GRAPHML_NS}
    assert root.tag == f"{{{GRAPHML_NS}}}graphml"
    keys = {k.get("id"): k for k in root.findall("g:key", ns)}
    assert keys["e_weight"].get("attr.type") == "double"
    graph = root.find("g:graph", ns)
    assert graph is not None and graph.get("edgedefault") == "directed"
    nodes = graph.findall("g:node", ns)
    edges = graph.findall("g:edge", ns)
    assert len(nodes) == len(g.nodes) and len(edges) == len(g.edges)
    node_ids = {n.get("id") for n in nodes}
    for e in edges:
        assert e.get("source") in node_ids and e.get("target") in node_ids
        for d in e.findall("g:data", ns):
            assert d.get("key") in keys and keys[d.get("key")].get("for") == "edge"
    path = tmp_path / "graph.graphml"
    path.write_bytes(data)
    import networkx as nx  # installed with dvc and torch; never skipped

    G = nx.read_graphml(path)
    assert G.number_of_nodes() == len(g.nodes)
    assert G.number_of_edges() == len(g.edges)
    ca, amara = node_id("content", A), node_id("entity", "person", "amara okafor")
    data_ = G.get_edge_data(ca, amara)
    attrs = data_ if "type" in data_ else next(iter(data_.values()))
    assert attrs["type"] == "MENTIONS" and attrs["weight"] == 3.0
    assert attrs["evidence"] == "1" * 16
    assert G.nodes[ca]["label"] == "Beekeeping in Lisbon"


def test_empty_graph() -> None:
    g = build_graph([])
    assert g.to_dict() == {"version": 1, "nodes": [], "edges": []}
    ET.fromstring(to_graphml(g))


def _etree_graphml(graph: Any) -> bytes:
    """The reference: the same document built with ElementTree and indented by two spaces."""
    from arkai.search.graph import _EDGE_ATTRS, _NODE_ATTRS, _SCHEMA, _XSI, _value

    ET.register_namespace("", GRAPHML_NS)
    ET.register_namespace("xsi", _XSI)
    root = ET.Element(
        f"{{{GRAPHML_NS}}}graphml", {f"{{{_XSI}}}schemaLocation": f"{GRAPHML_NS} {_SCHEMA}"}
    )
    for scope, attrs, prefix in (("node", _NODE_ATTRS, "n"), ("edge", _EDGE_ATTRS, "e")):
        for name, kind in attrs:
            ET.SubElement(
                root,
                f"{{{GRAPHML_NS}}}key",
                {"id": f"{prefix}_{name}", "for": scope, "attr.name": name, "attr.type": kind},
            )
    g = ET.SubElement(root, f"{{{GRAPHML_NS}}}graph", {"id": "arkai", "edgedefault": "directed"})
    for node in graph.nodes:
        el = ET.SubElement(g, f"{{{GRAPHML_NS}}}node", {"id": node["id"]})
        for name, kind in _NODE_ATTRS:
            if node.get(name) not in (None, ""):
                d = ET.SubElement(el, f"{{{GRAPHML_NS}}}data", {"key": f"n_{name}"})
                d.text = _value(node[name], kind)
    for edge in graph.edges:  # no edge IDs (optional in GraphML)
        el = ET.SubElement(
            g, f"{{{GRAPHML_NS}}}edge", {"source": edge["source"], "target": edge["target"]}
        )
        for name, kind in _EDGE_ATTRS:
            value = edge.get(name)
            if value is None or (isinstance(value, list) and not value):
                continue
            d = ET.SubElement(el, f"{{{GRAPHML_NS}}}data", {"key": f"e_{name}"})
            d.text = _value(value, kind)
    ET.indent(root, space="  ")
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=False)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + body + b"\n"


def test_graphml_is_the_elementtree_document() -> None:
    from arkai.search.graph import Graph

    assert to_graphml(build_graph(items())) == _etree_graphml(build_graph(items()))
    assert to_graphml(build_graph([])) == _etree_graphml(build_graph([]))
    # Characters both writers must escape, in labels, URLs, IDs and evidence.
    odd = Graph(
        nodes=[
            {"id": "content:a", "type": "Content", "label": 'Bees & <wasps> "here"\ttab\r\n',
             "url": "https://x.test/?a=1&b=<2>", "path": "library/a", "content_id": "a"},
            {"id": 'tag:q"&<>', "type": "Tag", "label": " "},
            {"id": "entity:x", "type": "Entity", "entity_type": "person"},
        ],
        edges=[
            {"source": "content:a", "target": 'tag:q"&<>', "type": "TAGGED_WITH", "weight": 1.0,
             "evidence": []},
            {"source": "content:a", "target": "entity:x", "type": "MENTIONS", "weight": 0.1 + 0.2,
             "evidence": ["e&1", "e<2>"]},
        ],
    )  # fmt: skip
    assert to_graphml(odd) == _etree_graphml(odd)


def test_graph_json_is_the_canonical_document() -> None:
    from arkai.search.graph import Graph, iter_graphml, iter_json, to_json

    assert to_json(build_graph(items())) == canonjson.dumps(build_graph(items()).to_dict()).encode()
    odd = Graph(
        nodes=[
            {"id": "tag:x", "type": "Tag", "label": 'q"uo\\te\n\tcafé \u2028 \U0001f41d'},
            {"id": "n", "type": "X", "extra": {"b": [], "a": {}}, "n": None, "t": True, "i": 3},
        ],
        edges=[
            {"source": "a", "target": "b", "type": "CITES", "weight": 1e-7, "evidence": []},
            {"source": "a", "target": "c", "type": "R", "weight": -0.0, "evidence": ["x", "y"]},
            {"source": "a", "target": "d", "type": "R", "weight": float("inf"), "evidence": [[]]},
        ],
    )
    assert to_json(odd) == canonjson.dumps(odd.to_dict()).encode()
    assert to_json(Graph()) == canonjson.dumps(Graph().to_dict()).encode()
    # In pieces of any size, the same bytes (both files).
    g = build_graph(items())
    for batch in (1, 2, 3):
        assert b"".join(iter_json(g, batch)) == to_json(g)
        assert b"".join(iter_graphml(g, batch)) == to_graphml(g)
    assert len(list(iter_json(g, 1))) > len(g.edges)


def test_related_rows_keep_a_bounded_list_per_item_and_the_same_rows() -> None:
    """Each item's list is cut to its best entries as it grows (an item is named at most
    three times in another's: related to it, citing it, cited by it), and the rows are the
    ones sorting every entry gives — ties on weight broken by title, relation, node."""
    import random

    from arkai.search.graph import related_rows

    rng = random.Random(5)
    nodes = [f"content:{n:03d}" for n in range(60)]
    titles = {n: f"Talk {rng.randrange(12)}" for n in nodes}  # titles repeat: ties
    ids = {n: n.split(":")[1] for n in nodes}
    links = []
    for a in nodes:
        for b in rng.sample(nodes, 40):
            if a < b:
                links.append((a, b, "RELATED_TO", rng.choice([0.25, 0.5, 0.75])))
            links.append((a, b, "CITES", float(rng.randrange(1, 4))))
        links.append((a, "topic:bees", "RELATED_TO", 1.0))  # not an item: left out
        links.append(("entity:x", a, "CITES", 1.0))  # nor is this source
        if rng.random() < 0.2:
            links.append((a, a, "CITES", 9.0))  # an item citing itself: left out
            links.append((a, rng.choice(nodes), "MENTIONS", 5.0))  # another type: left out
    links += [(nodes[0], nodes[5], "RELATED_TO", 0.0), (nodes[7], nodes[3], "CITES", 0.0)]
    rng.shuffle(links)

    for limit in (1, 3, 20, 200):
        assert list(related_rows(links, titles, ids, limit)) == naive_related(
            links, titles, ids, limit
        )
    assert list(related_rows([], titles, ids)) == []


def naive_related(
    links: list[tuple[str, str, str, float]],
    titles: dict[str, str],
    ids: dict[str, str],
    limit: int,
) -> list[dict[str, object]]:
    """related.jsonl's rows by the rule, entry by entry: every edge seen from both ends (each
    end's edges as they came, those from its side first), sorted by weight (highest first),
    the other item's title, the relation and its node; each other item once, ``limit`` kept."""
    kinds = {"RELATED_TO": ("related", "related"), "CITES": ("cites", "cited by")}
    scored: dict[str, list[tuple[float, str, str, str]]] = {}
    kept = [(s, t, kinds[k], w) for s, t, k, w in links
            if s != t and s in titles and t in titles and k in kinds]  # fmt: skip
    for s, t, rel, w in kept:
        scored.setdefault(s, []).append((-w, titles[t], rel[0], t))
    for s, t, rel, w in kept:
        scored.setdefault(t, []).append((-w, titles[s], rel[1], s))
    out = []
    for src in sorted(scored, key=ids.__getitem__):
        seen: set[str] = set()
        rows: list[list[object]] = []
        for neg_w, _, rel_name, other in sorted(scored[src]):
            if len(rows) < limit and other not in seen:
                seen.add(other)
                rows.append([ids[other], rel_name, -neg_w])
        out.append({"id": ids[src], "related": rows})
    return out


@pytest.mark.parametrize("seed", range(6))
def test_related_lines_are_the_rows_by_the_rule_as_canonical_json(seed: int) -> None:
    """related.jsonl's lines, made as text (issue 17), are the bytes canonjson gives for the
    rows the rule gives, whatever the IDs hold (quotes, backslashes, non-ASCII, control
    characters, U+2028), the weights (-0.0 and 0.0, integers, tiny and huge numbers, infinity,
    ties), self-edges, items with more entries than the limit, and however they are batched."""
    import random

    import numpy as np

    from arkai.core import canonjson
    from arkai.search.graph import RELATION_TYPES, related_lines_of

    rng = random.Random(seed)
    odd = ['q"uote', "back\\slash", "ünï", "tab\tnl\n", "\x01", "日本", "plain", "a\u2028b"]
    n = rng.randint(2, 40)
    ids = {f"content:{i:02d}": f"{rng.choice(odd)}-{i}" for i in range(n)}
    titles = {k: rng.choice(["Same", "Other", "Ünï", ""]) for k in ids}
    nodes = sorted(titles, key=ids.__getitem__)
    m = rng.randint(0, 400)
    weights = [0.0, -0.0, 1.0, 2.5, 1e-7, 1e300, 0.1 + 0.2, float("inf"), 3.0]
    src = np.array([rng.randrange(n) for _ in range(m)], dtype=np.int32)
    dst = np.array([rng.randrange(n) for _ in range(m)], dtype=np.int32)
    kind = np.array([rng.randrange(2) for _ in range(m)], dtype=np.int8)
    weight = np.array([rng.choice(weights) for _ in range(m)], dtype=np.float64)
    links = [(nodes[s], nodes[d], RELATION_TYPES[k], w) for s, d, k, w in zip(
        src.tolist(), dst.tolist(), kind.tolist(), weight.tolist(), strict=True)]  # fmt: skip
    limit = rng.choice([1, 3, 20])
    expected = canonjson.dumps_lines(naive_related(links, titles, ids, limit))
    for batch in (1, 7, 2048):
        pieces = list(related_lines_of(nodes, src, dst, kind, weight, titles, ids, limit, batch))
        assert "".join(pieces) == expected
        assert all(p.count("\n") <= batch for p in pieces)
