"""The builtin provider's TF-IDF matrices are scikit-learn's, bit for bit and layout and all,
without importing it (arkai.providers.builtin.tfidf)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from arkai.errors import ArkaiError
from arkai.formats import parse_source, render_transcript
from arkai.providers.builtin import claims
from arkai.providers.builtin.text import build_units, split_lines
from arkai.providers.builtin.tfidf import tfidf_matrix
from tests.conftest import SAMPLES, TRANSCRIPTS

SUFFIXES = {".vtt", ".srt", ".txt", ".md", ".json"}


def texts() -> Iterator[tuple[str, str]]:
    """Real transcripts (../shared/data) and the sample library's sources, rendered."""
    paths = [p for p in sorted(TRANSCRIPTS.rglob("*")) if p.is_file() and p.suffix in SUFFIXES]
    paths += [p for p in sorted(SAMPLES.iterdir()) if p.suffix in SUFFIXES]
    for path in paths:
        try:
            parsed = parse_source(path.name, path.read_bytes())
        except ArkaiError:  # a file of another kind: not a transcript
            continue
        yield path.name, render_transcript(parsed)


def sklearn_matrix(docs: list[list[str]], sublinear_tf: bool, norm: bool) -> tuple[object, list]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=lambda d: d, sublinear_tf=sublinear_tf,
                          norm="l2" if norm else None, dtype=np.float64)  # fmt: skip
    matrix = vec.fit_transform(docs)
    return matrix, [str(t) for t in vec.get_feature_names_out()]


def assert_same(ours: tuple[object, list], theirs: tuple[object, list]) -> None:
    a, terms_a = ours
    b, terms_b = theirs
    assert type(a) is type(b) and a.shape == b.shape  # type: ignore[attr-defined]
    for field in ("data", "indices", "indptr"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), field
    assert terms_a == terms_b


@pytest.mark.parametrize(("sublinear_tf", "norm"), [(True, True), (False, False)])
def test_the_units_of_real_transcripts_give_scikit_learns_matrix(
    sublinear_tf: bool, norm: bool
) -> None:
    """As claims ranks units (sublinear, L2) and entities weighs concept phrases (raw counts,
    no norm): the values, the order of each row and the column numbers are the same."""
    checked = 0
    for _name, text in texts():
        docs = [claims._analyzer(u.text) for u in build_units(text, split_lines(text))]
        if not any(docs):
            continue
        assert_same(tfidf_matrix(docs, sublinear_tf=sublinear_tf, norm=norm),
                    sklearn_matrix(docs, sublinear_tf, norm))  # fmt: skip
        checked += 1
    assert checked >= 8


def test_edge_cases_match_too() -> None:
    cases = [
        [["b", "a", "b", "c"], [], ["c", "d"], ["a", "a", "e", "b"], []],
        [["ä", "a", "Z", "z", "é"], ["z", "z", "z"]],
        [["only"]],
        [[], ["x"], []],
    ]
    for docs in cases:
        for sub, norm in ((True, True), (False, False), (False, True), (True, False)):
            assert_same(tfidf_matrix(docs, sublinear_tf=sub, norm=norm),
                        sklearn_matrix(docs, sub, norm))  # fmt: skip
    for empty in ([], [[], []]):
        with pytest.raises(ValueError, match="empty vocabulary"):
            tfidf_matrix(empty)


def test_ranking_a_transcript_imports_no_scikit_learn(tmp_path: Path) -> None:
    """What an extract or condense process pays per changed item: claims, wisdom and the
    concept phrases ranked without scikit-learn's ≈ 0.8 s import."""
    text = next(t for _n, t in texts())
    script = tmp_path / "rank.py"
    script.write_text(
        "import sys\n"
        "from arkai.providers.builtin import claims, entities\n"
        f"text = {text!r}\n"
        "r = claims.rank_units(text)\n"
        "assert r.candidates and r.matrix is not None\n"
        "lines = entities.split_lines(text)\n"
        "entities.concept_groups(text, lines, set())\n"
        "print('sklearn' in sys.modules, 'scipy.sparse' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.split() == ["False", "True"]
