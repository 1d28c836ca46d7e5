"""The sparse impact matrix must score exactly like rank_bm25.BM25Okapi."""

import sysconfig
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from core.bm25 import BM25Matrix
from core.tokenize import code_tokens


def stdlib_corpus(limit_files=60, window=40):
    """40-line windows of real Python files from the standard library."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(lib.glob("*.py"))[:limit_files]:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for start in range(0, max(len(lines), 1), window):
            docs.append(code_tokens("\n".join(lines[start : start + window])))
    return docs


QUERIES = [
    "parse the command line arguments",
    "open file read bytes",
    "self self self return",  # repeated terms count again
    "HTTPServer handle_request",
    "def",  # in most documents: negative idf, floored to epsilon * average idf
    "qqqqzzzzxx",
]


@pytest.fixture(scope="module")
def corpus():
    docs = stdlib_corpus()
    assert len(docs) > 1000
    return docs


def test_scores_equal_rank_bm25_on_a_real_corpus(corpus):
    ref = BM25Okapi(corpus)
    mine = BM25Matrix.from_documents(corpus)
    for q in QUERIES:
        tokens = code_tokens(q)
        np.testing.assert_allclose(mine.get_scores(tokens), ref.get_scores(tokens), rtol=0, atol=1e-9)


def test_top_returns_best_matching_rows_in_score_order(corpus):
    ref = BM25Okapi(corpus)
    mine = BM25Matrix.from_documents(corpus)
    tokens = code_tokens("parse the command line arguments")
    rows, scores = mine.top(tokens, 20)
    expected = ref.get_scores(tokens)
    assert list(rows) == sorted(range(len(corpus)), key=lambda i: (-expected[i], i))[:20]
    np.testing.assert_allclose(scores, expected[rows], atol=1e-9)
    assert mine.top(code_tokens("qqqqzzzzxx"), 10)[0].size == 0


def test_allowed_mask_filters_rows(corpus):
    mine = BM25Matrix.from_documents(corpus)
    allowed = np.zeros(len(corpus), dtype=bool)
    allowed[::2] = True
    rows, _ = mine.top(code_tokens("return value"), 50, allowed)
    assert rows.size and all(r % 2 == 0 for r in rows)


def test_incremental_update_equals_a_fresh_build(corpus):
    base = BM25Matrix.from_documents(corpus[:500], keys=range(500))
    updated = base.updated(remove_keys=range(100, 200), docs=corpus[500:700], keys=range(500, 700))
    docs = corpus[:100] + corpus[200:500] + corpus[500:700]
    ref = BM25Okapi(docs)
    assert list(updated.keys) == list(range(100)) + list(range(200, 700))
    for q in QUERIES:
        tokens = code_tokens(q)
        np.testing.assert_allclose(updated.get_scores(tokens), ref.get_scores(tokens), atol=1e-9)


def test_save_and_load_round_trip(tmp_path, corpus):
    mine = BM25Matrix.from_documents(corpus[:300], keys=np.arange(300) + 1000)
    mine.save(tmp_path, "bm25")
    back = BM25Matrix.load(tmp_path, "bm25")
    assert list(back.keys) == list(mine.keys)
    tokens = code_tokens("import os path join")
    np.testing.assert_array_equal(back.get_scores(tokens), mine.get_scores(tokens))


def test_empty_corpus_scores_nothing():
    m = BM25Matrix.from_documents([])
    assert len(m) == 0
    assert m.top(["x"], 5)[0].size == 0
