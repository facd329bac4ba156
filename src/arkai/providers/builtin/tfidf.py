"""TF-IDF document-term matrices for the builtin provider, without importing scikit-learn.

The builtin extraction ranks a transcript's units by TF-IDF (:mod:`.claims`, the concept
phrases of :mod:`.entities`). It used scikit-learn's ``TfidfVectorizer`` (with a callable
analyzer, ``min_df=1``, ``max_df=1.0``, smoothed IDF), whose import alone takes ≈ 0.8 s on top
of SciPy's — paid by every ``extract`` and ``condense`` process that ranks one changed item
(issue 17: the daily loop's fixed cost). :func:`tfidf_matrix` makes the very matrix it made:
the same values, bit for bit, and the same layout — within a row the terms in the order they
first appear in the documents, numbered by their sorted order — so every product taken of
it later sums in the same order (tested against scikit-learn on real transcripts, layout and
all, and through the claims and concepts it ranks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["tfidf_matrix"]


def tfidf_matrix(
    docs: Iterable[Sequence[str]], *, sublinear_tf: bool = False, norm: bool = True
) -> tuple[Any, list[str]]:
    """The TF-IDF matrix of ``docs`` (each a list of its terms, repeats counted) as
    ``scipy.sparse.csr_matrix`` of float64, and the terms by column (sorted). Each count
    ``tf`` becomes ``1 + ln(tf)`` with ``sublinear_tf``, is multiplied by the smoothed IDF
    ``ln((1 + n) / (1 + df)) + 1``, and each row is divided by its L2 norm (summed in the
    row's order) with ``norm``. ValueError when no document has a term."""
    from scipy import sparse

    vocabulary: dict[str, int] = {}
    indices: list[int] = []
    counts: list[int] = []
    indptr = [0]
    for doc in docs:
        found: dict[int, int] = {}
        for term in doc:
            j = vocabulary.setdefault(term, len(vocabulary))
            found[j] = found.get(j, 0) + 1
        for j in sorted(found):  # by first appearance in the documents
            indices.append(j)
            counts.append(found[j])
        indptr.append(len(indices))
    if not vocabulary:
        raise ValueError("empty vocabulary")
    terms = sorted(vocabulary)
    renumber = np.empty(len(terms), dtype=np.int32)
    for new, term in enumerate(terms):
        renumber[vocabulary[term]] = new
    columns = renumber[np.asarray(indices, dtype=np.int32)] if indices else renumber[:0]
    data = np.asarray(counts, dtype=np.float64)
    n_docs = len(indptr) - 1
    # The smoothed IDF, each operation as scikit-learn orders it.
    df = np.bincount(columns, minlength=len(terms)).astype(np.float64)
    df += 1
    idf = np.full_like(df, fill_value=n_docs + 1, dtype=np.float64)
    idf /= df
    np.log(idf, out=idf)
    idf += 1.0
    if sublinear_tf:
        np.log(data, out=data)
        data += 1.0
    data *= idf[columns]
    if norm:
        values = data.tolist()
        for i in range(n_docs):
            lo, hi = indptr[i], indptr[i + 1]
            total = 0.0
            for x in values[lo:hi]:
                total += x * x  # one rounding each, in the row's order
            if total != 0.0:
                data[lo:hi] /= math.sqrt(total)
    matrix = sparse.csr_matrix(
        (data, columns, np.asarray(indptr, dtype=np.int32)), shape=(n_docs, len(terms))
    )
    return matrix, terms
