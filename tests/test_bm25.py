"""The sparse impact matrix must score exactly like rank_bm25.BM25Okapi."""

import sysconfig
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ranklens.core.bm25 import BM25Matrix, TokenCounter, Vocabulary, widen
from ranklens.core.tokenize import code_tokens


def stdlib_texts(limit_files=60, window=40):
    """40-line windows of real Python files from the standard library."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(lib.glob("*.py"))[:limit_files]:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for start in range(0, max(len(lines), 1), window):
            texts.append("\n".join(lines[start : start + window]))
    return texts


QUERIES = [
    "parse the command line arguments",
    "open file read bytes",
    "self self self return",  # repeated terms count again
    "HTTPServer handle_request",
    "def",  # in most documents: negative idf, floored to epsilon * average idf
    "qqqqzzzzxx",
]


@pytest.fixture(scope="module")
def texts():
    out = stdlib_texts()
    assert len(out) > 1000
    return out


@pytest.fixture(scope="module")
def corpus(texts):
    return [code_tokens(t) for t in texts]


def test_scores_equal_rank_bm25_on_a_real_corpus(corpus):
    ref = BM25Okapi(corpus)
    mine = BM25Matrix.from_documents(corpus)
    for q in QUERIES:
        tokens = code_tokens(q)
        np.testing.assert_allclose(mine.get_scores(tokens), ref.get_scores(tokens), rtol=0, atol=1e-9)


def test_token_counter_builds_the_same_matrix_as_tokenizing(texts, corpus):
    vocab = Vocabulary()
    tf = TokenCounter(vocab).count(texts)
    for row in (0, 17, len(texts) - 1):
        got = {vocab.tokens[c]: v for c, v in zip(tf[row].indices, tf[row].data)}
        assert got == Counter(corpus[row])
    fast = BM25Matrix(tf, vocab, np.arange(len(texts)))
    ref = BM25Okapi(corpus)
    for q in QUERIES:
        tokens = code_tokens(q)
        np.testing.assert_allclose(fast.get_scores(tokens), ref.get_scores(tokens), rtol=0, atol=1e-9)


def test_top_returns_best_matching_rows_in_score_order(corpus):
    ref = BM25Okapi(corpus)
    mine = BM25Matrix.from_documents(corpus)
    tokens = code_tokens("parse the command line arguments")
    rows, scores = mine.top(tokens, 20)
    expected = ref.get_scores(tokens)
    assert list(rows) == sorted(range(len(corpus)), key=lambda i: (-expected[i], i))[:20]
    np.testing.assert_allclose(scores, expected[rows], atol=1e-9)
    assert mine.top(code_tokens("qqqqzzzzxx"), 10)[0].size == 0


def test_ties_resolve_by_row_order():
    m = BM25Matrix.from_documents([["a", "b"]] * 5 + [["c"]] * 3)
    rows, _ = m.top(["a"], 3)
    assert list(rows) == [0, 1, 2]


def test_allowed_mask_filters_rows(corpus):
    mine = BM25Matrix.from_documents(corpus)
    allowed = np.zeros(len(corpus), dtype=bool)
    allowed[::2] = True
    rows, _ = mine.top(code_tokens("return value"), 50, allowed)
    assert rows.size and all(r % 2 == 0 for r in rows)


def test_an_update_edits_the_term_major_arrays_into_exactly_a_fresh_builds(texts, tmp_path):
    """Rows dropped and appended in place give the very arrays (and scores) of a matrix built
    from the surviving and new documents, on a saved (memory-mapped) matrix too."""
    from scipy import sparse

    vocab = Vocabulary()
    counter = TokenCounter(vocab)
    first = counter.count(texts[:300])
    base = BM25Matrix(first, vocab, np.arange(300))
    base.save(tmp_path, "m")
    loaded = BM25Matrix.load(tmp_path, "m", vocab)
    later = counter.count(texts[300:360])  # grows the vocabulary
    gone = [0, 5, 6, 7, 150, 299]
    keep = np.setdiff1d(np.arange(300), gone)
    fresh = BM25Matrix(
        sparse.vstack([widen(first, len(vocab))[keep], widen(later, len(vocab))], format="csr"),
        vocab, np.concatenate([keep, np.arange(1000, 1060)]),
    )
    for matrix in (base, loaded):
        got = matrix.updated(gone, later, range(1000, 1060))
        np.testing.assert_array_equal(got.keys, fresh.keys)
        for mine, want in zip(got._columns + (got._doc_len, got._idf, got._dnorm),
                              fresh._columns + (fresh._doc_len, fresh._idf, fresh._dnorm)):
            assert mine.dtype == want.dtype
            np.testing.assert_array_equal(mine, want)
        tokens = code_tokens("def read the file and return its lines")
        np.testing.assert_array_equal(got.get_scores(tokens), fresh.get_scores(tokens))
    nothing_dropped = base.updated([], later, range(1000, 1060))
    assert len(nothing_dropped) == 360


def test_incremental_update_equals_a_fresh_build(texts, corpus):
    vocab = Vocabulary()
    counter = TokenCounter(vocab)
    base = BM25Matrix(counter.count(texts[:500]), vocab, np.arange(500))
    updated = base.updated(range(100, 200), counter.count(texts[500:700]), range(500, 700))
    docs = corpus[:100] + corpus[200:500] + corpus[500:700]
    ref = BM25Okapi(docs)
    assert list(updated.keys) == list(range(100)) + list(range(200, 700))
    for q in QUERIES:
        tokens = code_tokens(q)
        np.testing.assert_allclose(updated.get_scores(tokens), ref.get_scores(tokens), atol=1e-9)


def _vocab_db(tmp_path):
    from ranklens.core._sqlite import sqlite3
    from ranklens.core.store import SCHEMA

    conn = sqlite3.connect(tmp_path / "index.sqlite", check_same_thread=False)
    conn.executescript(SCHEMA)
    return conn


def test_save_and_load_round_trip_including_a_later_update(tmp_path, texts):
    from ranklens.core.bm25 import StoredVocabulary

    conn = _vocab_db(tmp_path)
    vocab = Vocabulary()
    counter = TokenCounter(vocab)
    mine = BM25Matrix(counter.count(texts[:300]), vocab, np.arange(300) + 1000)
    mine.save(tmp_path, "bm25")
    vocab.store(conn, 0, "s1")
    conn.commit()
    back = BM25Matrix.load(tmp_path, "bm25", StoredVocabulary(lambda: conn))
    assert list(back.keys) == list(mine.keys)
    tokens = code_tokens("import os path join")
    np.testing.assert_array_equal(back.get_scores(tokens), mine.get_scores(tokens))
    back_vocab = Vocabulary.read(conn).copy()
    assert back_vocab.tokens == vocab.tokens
    counter2 = TokenCounter(back_vocab)
    again = BM25Matrix.load(tmp_path, "bm25", back_vocab).updated([1000], counter2.count(texts[300:310]), range(2000, 2010))
    ref = mine.updated([1000], counter.count(texts[300:310]), range(2000, 2010))
    np.testing.assert_allclose(again.get_scores(tokens), ref.get_scores(tokens), atol=1e-12)


def test_stored_vocabulary_looks_up_only_the_query_tokens_and_ignores_later_columns(tmp_path):
    from ranklens.core.bm25 import StoredVocabulary

    conn = _vocab_db(tmp_path)
    vocab = Vocabulary(["open", "file", "read"])
    vocab.store(conn, 0, "a")
    stored = StoredVocabulary(lambda: conn)
    assert stored.columns(["read", "nope", "open", "read"]) == [2, None, 0, 2]
    assert stored.columns([]) == []
    m = BM25Matrix.from_documents([["open", "file"], ["read"]])
    later = Vocabulary(["open", "file", "read", "write"])  # a newer generation's token
    later.store(conn, 3, "b")
    m.vocab = stored
    assert m.top(["write", "read"], 5)[0].tolist() == [1]  # "write" (column 3) is past this matrix


def test_empty_corpus_scores_nothing():
    m = BM25Matrix.from_documents([])
    assert len(m) == 0
    assert m.top(["x"], 5)[0].size == 0


def test_vocabulary_reads_are_shared_by_stamp_and_copies_grow_alone(tmp_path):
    conn = _vocab_db(tmp_path)
    saved = Vocabulary(["a", "b"])
    saved.store(conn, 0, "one")
    saved.add("late")  # the storer goes on growing its own: readers of "one" must not see it
    first = Vocabulary.read(conn, "one")
    assert first.tokens == ["a", "b"] and first.index == {"a": 0, "b": 1}
    assert Vocabulary.read(conn, "one") is first  # the same state: not read again
    grown = first.copy()
    grown.add("c")  # the indexer grows a copy of what it reads; the next reader must not see it
    assert Vocabulary.read(conn, "one").tokens == ["a", "b"]
    grown.store(conn, 2, "two")
    assert Vocabulary.read(conn, "two").tokens == ["a", "b", "c"]
    # Without a stamp (or another one), the table is read.
    conn.execute("INSERT INTO vocab(token, col) VALUES ('d', 3)")
    assert Vocabulary.read(conn).tokens == ["a", "b", "c", "d"]
    assert Vocabulary.read(conn, "three").tokens == ["a", "b", "c", "d"]


def test_batches_merged_equal_one_counting_pass(texts):
    """TokenMerger numbers tokens and counts them as one TokenCounter pass over every
    document, field after field, would (the indexer counts batches in a worker process)."""
    from ranklens.core.bm25 import TokenMerger, count_batch, widen

    docs = texts[:400]
    fields = {"text": docs, "head": [t.split("\n", 1)[0] for t in docs]}
    mask = np.array([i % 3 != 0 for i in range(len(docs))])
    matrices = {"both": ({"text": 1, "head": 3}, np.ones(len(docs), dtype=bool)), "head": ({"head": 1}, mask)}
    start = ["zzz_known", "def"]  # an update grows the previous generation's vocabulary

    ref_vocab = Vocabulary(start)
    counter = TokenCounter(ref_vocab)
    words = {name: counter.word_counts(fields[name]) for name in sorted(fields)}
    ref = {
        name: counter.token_counts(sum(w * widen(words[f], len(counter.words))[rows] for f, w in spec.items()))
        for name, (spec, rows) in matrices.items()
    }

    merger = TokenMerger(Vocabulary(start), matrices)
    for lo in range(0, len(docs), 70):
        part = slice(lo, lo + 70)
        merger.add(count_batch({f: v[part] for f, v in fields.items()}, {n: (s, r[part]) for n, (s, r) in matrices.items()}))
    merger.finish()
    assert merger.vocab.tokens == ref_vocab.tokens
    for name in matrices:
        got = merger.tf(name)
        assert got.shape == (ref[name].shape[0], len(ref_vocab))
        assert got.indices.dtype == ref[name].indices.dtype
        np.testing.assert_array_equal(got.indptr, ref[name].indptr)
        np.testing.assert_array_equal(got.indices, ref[name].indices)
        np.testing.assert_array_equal(got.data, ref[name].data)
