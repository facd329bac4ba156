"""Retrieval metrics on hand-computed examples, the BEIR loader, and a tiny end-to-end eval."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.errors import InvalidInputError
from arkai.search.eval import (
    aggregate,
    load_beir,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
    run_eval,
    split_queries,
)

RELS = {"d2": 1, "d3": 2, "d9": 1, "d7": 0}
RANKING = ["d1", "d2", "d3", "d7"]


def test_ndcg_graded_by_hand() -> None:
    # Ideal gains 2, 1, 1 at ranks 1..3; found: d2 (gain 1) at rank 2, d3 (gain 2) at rank 3.
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    assert ndcg_at_k(RANKING, RELS) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(RANKING, RELS) == pytest.approx(0.520909, abs=1e-6)
    assert ndcg_at_k(RANKING, RELS, k=1) == 0.0
    # k=2 cuts both the run and the ideal list: ideal 2, 1.
    assert ndcg_at_k(RANKING, RELS, k=2) == pytest.approx(
        (1 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


def test_ndcg_perfect_and_empty() -> None:
    assert ndcg_at_k(["d3", "d2", "d9"], RELS) == pytest.approx(1.0)
    assert ndcg_at_k(["d3", "d9", "d2"], RELS) == pytest.approx(1.0)  # equal gains swap freely
    assert ndcg_at_k([], RELS) == 0.0
    assert ndcg_at_k(["d1"], {"d1": 0}) == 0.0  # nothing relevant


def test_recall_by_hand() -> None:
    assert recall_at_k(RANKING, RELS) == pytest.approx(2 / 3)
    assert recall_at_k(RANKING, RELS, k=2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKING, {"d7": 0}) == 0.0


def test_mrr_by_hand() -> None:
    assert mrr_at_k(RANKING, RELS) == 0.5
    assert mrr_at_k(["x"] * 10 + ["d2"], RELS) == 0.0  # rank 11 is outside the cut
    assert mrr_at_k(["d9"], RELS) == 1.0


def test_aggregate_averages_over_judged_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    runs = {"q1": ["a"], "q2": ["x", "b"], "q3": ["c"], "q4": ["a"]}
    m = aggregate(runs, qrels)
    assert m["queries"] == 2  # q3 has nothing relevant, q4 is unjudged
    assert m["mrr@10"] == pytest.approx((1 + 0.5) / 2)
    assert m["recall@100"] == pytest.approx(1.0)
    assert m["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3)) / 2)


def test_split_queries_is_deterministic_and_disjoint() -> None:
    qids = [str(i) for i in range(11)]
    a, b = split_queries(qids)
    assert (a, b) == split_queries(list(reversed(qids)))
    assert set(a).isdisjoint(b)
    assert sorted(a + b, key=int) == sorted(qids, key=int)
    assert len(a) == 5


def _write_beir(root: Path, corpus: list[Any], queries: list[Any], qrels: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "\n".join(c if isinstance(c, str) else json.dumps(c) for c in corpus) + "\n"
    )
    (root / "queries.jsonl").write_text(
        "\n".join(q if isinstance(q, str) else json.dumps(q) for q in queries) + "\n"
    )
    (root / "qrels" / "train.tsv").write_text(qrels)
    return root


CORPUS = [
    {"_id": "d1", "title": "Aspirin", "text": "Aspirin reduces the risk of heart attack."},
    {"_id": "d2", "title": "Statins", "text": "Statins lower cholesterol in the blood."},
    {"_id": "d3", "title": "Vitamin D", "text": "Vitamin D deficiency is linked to bone loss."},
    {"_id": "d4", "title": "Sleep", "text": "Poor sleep raises blood pressure."},
]
QUERIES = [
    {"_id": "1", "text": "does aspirin prevent heart attacks"},
    {"_id": "2", "text": "cholesterol lowering drugs"},
    {"_id": "3", "text": "bone loss and vitamin deficiency"},
]
QRELS = "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n3\td3\t2\n"


def test_load_beir_skips_malformed_lines(tmp_path: Path) -> None:
    root = _write_beir(
        tmp_path / "b",
        [*CORPUS, "{not json", {"_id": "d5"}, {"_id": "d1", "text": "dup"}],
        [*QUERIES, "[1, 2]"],
        QRELS + "4\td1\n5\td2\tx\n",
    )
    data = load_beir(root, "train")
    assert [d.id for d in data.corpus] == ["d1", "d2", "d3", "d4"]
    assert set(data.queries) == {"1", "2", "3"}
    assert data.qrels == {"1": {"d1": 1}, "2": {"d2": 1}, "3": {"d3": 2}}
    joined = "\n".join(data.problems)
    assert len(data.problems) == 6
    assert f"{root / 'corpus.jsonl'}:5: not JSON" in joined
    assert f"{root / 'corpus.jsonl'}:6:" in joined
    assert "duplicate document id 'd1'" in joined
    assert f"{root / 'queries.jsonl'}:4: not a JSON object" in joined
    assert f"{root / 'qrels' / 'train.tsv'}:5:" in joined
    assert f"{root / 'qrels' / 'train.tsv'}:6: score 'x'" in joined
    assert data.judged_queries == ["1", "2", "3"]


def test_load_beir_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not found"):
        load_beir(tmp_path / "nope")
    root = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    with pytest.raises(InvalidInputError, match="no qrels for split 'test'") as info:
        load_beir(root, "test")
    assert "available splits: train" in str(info.value)
    with pytest.raises(InvalidInputError, match="bad split"):
        load_beir(root, "../train")
    (root / "queries.jsonl").unlink()
    with pytest.raises(InvalidInputError, match=r"missing queries\.jsonl"):
        load_beir(root)


class BagEmbedder:
    """A deterministic stand-in for a sentence model: hashed bag of words, L2-normalised."""

    name = "test-bag"
    dim = 64

    def encode(self, texts: list[str], *, batch_size: int = 64, kind: str = "passage") -> Any:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w.strip(".,"))) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def test_run_eval_end_to_end(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    cache = tmp_path / "cache"
    out = run_eval(root, "train", embedder=BagEmbedder(), cache_dir=cache)
    assert out["queries"] == 3 and out["documents"] == 4
    assert set(out["modes"]) == {"lexical", "vector", "rrf", "hybrid"}
    for mode, m in out["modes"].items():
        assert 0.0 <= m["ndcg@10"] <= 1.0, mode
        assert m["qps"] > 0
        assert m["queries"] == 3
    assert out["modes"]["lexical"]["ndcg@10"] == pytest.approx(1.0)
    assert out["build"]["vector_cached"] is False
    assert len(list(cache.glob("*.npy"))) == 1
    again = run_eval(root, "train", ["vector"], embedder=BagEmbedder(), cache_dir=cache)
    assert again["build"]["vector_cached"] is True
    assert again["modes"]["vector"]["ndcg@10"] == out["modes"]["vector"]["ndcg@10"]


def test_run_eval_lexical_needs_no_embedder(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    out = run_eval(root, "train", ["lexical"], limit_queries=2, cache_dir=None)
    assert out["queries"] == 2
    assert "vector_seconds" not in out["build"]


def test_run_eval_rejects_bad_modes(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    with pytest.raises(InvalidInputError, match="unknown mode"):
        run_eval(root, "train", ["lexical", "magic"])
    with pytest.raises(InvalidInputError, match="positive"):
        run_eval(root, "train", ["lexical"], limit_queries=0)


def test_cli_retrieval_json_and_table(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from arkai.cli.eval import eval_

    root = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    runner = CliRunner()
    res = runner.invoke(
        eval_, ["retrieval", "--corpus", str(root), "--modes", "lexical", "--json", "-q"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert list(out["modes"]) == ["lexical"]
    assert out["modes"]["lexical"]["ndcg@10"] == pytest.approx(1.0)
    res = runner.invoke(
        eval_, ["retrieval", "--corpus", str(root), "--modes", "lexical", "--half", "b", "-q"]
    )
    assert res.exit_code == 0, res.output
    assert "nDCG@10" in res.stdout and "half b" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "lexical,bogus"], "unknown mode"),
        (["--split", "test"], "no qrels for split 'test'"),
        (["--limit-queries", "0"], "positive"),
    ],
)
def test_cli_retrieval_errors(tmp_path: Path, args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from arkai.cli.eval import eval_

    root = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    res = CliRunner().invoke(eval_, ["retrieval", "--corpus", str(root), "-q", *args])
    assert isinstance(res.exception, InvalidInputError)
    assert message in str(res.exception)


def test_cli_missing_corpus(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from arkai.cli.eval import eval_

    res = CliRunner().invoke(eval_, ["retrieval", "--corpus", str(tmp_path / "none")])
    assert isinstance(res.exception, InvalidInputError)
