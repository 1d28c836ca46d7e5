"""The sparse impact matrix must score exactly like rank_bm25.BM25Okapi."""

import sysconfig
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ranklens.core.storage.bm25 import BM25Matrix
from ranklens.core.storage.terms import TokenCounter, Vocabulary, widen
from ranklens.core.text.tokenize import code_tokens


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
    fast = BM25Matrix.from_tf(tf, vocab, np.arange(len(texts)))
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


def test_a_query_asked_again_within_a_mask_ranks_as_on_a_fresh_matrix(corpus):
    # The chunk step asks the last query again within its top files: the matched rows kept
    # from the first ask must give what a matrix that never saw the query gives, for every
    # mask and limit, and a query asked in between must not leak into it.
    mine = BM25Matrix.from_documents(corpus)
    rng = np.random.default_rng(7)
    for q in QUERIES:
        tokens = code_tokens(q)
        mine.top(tokens, 30)
        mine.top(code_tokens("socket timeout"), 30)
        mine.top(tokens, 30)
        for share, limit in ((0.5, 40), (0.01, 1000), (1.0, 5)):
            allowed = rng.random(len(corpus)) < share
            got = mine.top(tokens, limit, allowed)
            fresh = BM25Matrix.from_documents(corpus).top(tokens, limit, allowed)
            assert np.array_equal(got[0], fresh[0]) and np.array_equal(got[1], fresh[1]), q


def _segments(texts, bounds, vocab):
    """One Postings per ``bounds`` run of ``texts`` (keys = text positions), counted with one
    growing vocabulary, as the indexer's generations do."""
    from ranklens.core.storage.bm25 import Postings

    counter = TokenCounter(vocab)
    return [Postings.from_tf(counter.count(texts[lo:hi]), np.arange(lo, hi)) for lo, hi in bounds]


def test_segments_with_tombstones_score_as_one_matrix_over_the_live_rows(texts, corpus):
    """Statistics updated generation by generation (segments added, rows tombstoned) give the
    scores rank_bm25 gives over the live documents, and exactly a fresh one-segment build's."""
    from ranklens.core.storage.bm25 import CorpusStats

    vocab = Vocabulary()
    segs = _segments(texts, [(0, 300), (300, 600), (600, 610), (610, 900)], vocab)
    stats = CorpusStats.empty()
    dead = set()
    # generation 1: the first two segments; 2: rows of both tombstoned, a small one added; 3: more
    steps = [([], segs[:2]), ([5, 6, 7, 299, 300, 450], segs[2:3]), ([0, 601, 609], segs[3:])]
    for gone, added in steps:
        removed = []
        for seg in segs:
            rows = seg.rows_of(np.array(sorted(gone)))
            if rows.size:
                mask = np.zeros(len(seg), dtype=bool)
                mask[rows] = True
                removed.append((seg, mask))
        stats = stats.updated(len(vocab), removed, added)
        dead |= set(gone)
    matrix = BM25Matrix(segs, stats, vocab)
    live = np.array([k not in dead for k in matrix.keys])
    assert stats.n == live.sum() and list(matrix.keys) == list(range(900))
    ref = BM25Okapi([corpus[k] for k in matrix.keys[live]])
    counter = TokenCounter(vocab)  # the same columns: counted again over the same vocabulary
    fresh = BM25Matrix.from_tf(counter.count([texts[k] for k in matrix.keys[live]]), vocab, matrix.keys[live])
    for q in QUERIES:
        tokens = code_tokens(q)
        got = matrix.get_scores(tokens)[live]
        np.testing.assert_allclose(got, ref.get_scores(tokens), rtol=0, atol=1e-9)
        np.testing.assert_array_equal(got, fresh.get_scores(tokens))
        rows, scores = matrix.top(tokens, 25, live)
        want_rows, want_scores = fresh.top(tokens, 25)
        np.testing.assert_array_equal(matrix.keys[rows], fresh.keys[want_rows])
        np.testing.assert_array_equal(scores, want_scores)


def test_merged_postings_equal_a_fresh_build_of_the_kept_rows(texts):
    from ranklens.core.storage.bm25 import Postings

    vocab = Vocabulary()
    segs = _segments(texts, [(0, 200), (200, 230), (230, 400)], vocab)
    keeps = [np.arange(200) % 7 != 3, np.ones(30, dtype=bool), np.arange(170) % 2 == 0]
    merged = Postings.concat([s.kept(k) for s, k in zip(segs, keeps)])
    kept_keys = np.concatenate([s.keys[k] for s, k in zip(segs, keeps)])
    counter = TokenCounter(vocab)
    want = Postings.from_tf(counter.count([texts[k] for k in kept_keys]), kept_keys)
    for name in ("cols", "indptr", "indices", "data", "doc_len", "keys"):
        got, ref = getattr(merged, name), getattr(want, name)
        assert got.dtype == ref.dtype, name
        np.testing.assert_array_equal(got, ref, err_msg=name)
    assert len(Postings.concat([segs[1].kept(np.zeros(30, dtype=bool))])) == 0


def _vocab_db(tmp_path):
    from ranklens.core.base._sqlite import sqlite3
    from ranklens.core.storage.store import SCHEMA

    conn = sqlite3.connect(tmp_path / "index.sqlite", check_same_thread=False)
    conn.executescript(SCHEMA)
    return conn


def test_save_and_load_round_trip(tmp_path, texts):
    from ranklens.core.storage.bm25 import CorpusStats, Postings, StoredVocabulary

    conn = _vocab_db(tmp_path)
    vocab = Vocabulary()
    segs = _segments(texts, [(0, 300), (300, 350)], vocab)
    mine = BM25Matrix(segs, CorpusStats.of(segs, len(vocab)), vocab)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for seg, folder in zip(segs, ("a", "b")):
        seg.save(tmp_path / folder, "bm25")
    mine.stats.save(tmp_path, "bm25")
    vocab.store(conn, 0)
    conn.commit()
    back = BM25Matrix.load(tmp_path, [tmp_path / "a", tmp_path / "b"], "bm25", StoredVocabulary(lambda: conn))
    assert list(back.keys) == list(mine.keys) and isinstance(back.segments[0], Postings)
    tokens = code_tokens("import os path join")
    np.testing.assert_array_equal(back.get_scores(tokens), mine.get_scores(tokens))
    assert back.stats.average_idf == mine.stats.average_idf


def test_stored_vocabulary_looks_up_only_the_query_tokens_and_ignores_later_columns(tmp_path):
    from ranklens.core.storage.bm25 import StoredVocabulary

    conn = _vocab_db(tmp_path)
    vocab = Vocabulary(["open", "file", "read"])
    vocab.store(conn, 0)
    stored = StoredVocabulary(lambda: conn)
    assert stored.columns(["read", "nope", "open", "read"]) == [2, None, 0, 2]
    assert stored.columns([]) == []
    m = BM25Matrix.from_documents([["open", "file"], ["read"]])
    later = Vocabulary(["open", "file", "read", "write"])  # a newer generation's token
    later.store(conn, 3)
    m.vocab = stored
    assert m.top(["write", "read"], 5)[0].tolist() == [1]  # "write" (column 3) is past this matrix


def test_empty_corpus_scores_nothing():
    m = BM25Matrix.from_documents([])
    assert len(m) == 0
    assert m.top(["x"], 5)[0].size == 0


def test_the_index_vocabulary_reads_only_the_tokens_a_batch_needs(tmp_path):
    from ranklens.core.storage.terms import IndexVocabulary

    conn = _vocab_db(tmp_path)
    Vocabulary(["open", "file", "read"]).store(conn, 0)
    vocab = IndexVocabulary(conn)
    assert len(vocab) == 3 and vocab.index == {}
    assert vocab.columns(["read", "nope"]) == [2, None] and vocab.index == {"read": 2}
    assert vocab.add("nope") == 3 and vocab.add("read") == 2 and len(vocab) == 4
    vocab.store(conn)
    vocab.add("later")
    vocab.store(conn)
    assert conn.execute("SELECT token FROM vocab ORDER BY col").fetchall() == [
        ("open",),
        ("file",),
        ("read",),
        ("nope",),
        ("later",),
    ]
    assert IndexVocabulary(conn, preload=True).columns(["later", "open"]) == [4, 0]


def test_batches_merged_equal_one_counting_pass(texts):
    """TokenMerger numbers tokens and counts them as one TokenCounter pass over every
    document, field after field, would (the indexer counts batches in a worker process)."""
    from ranklens.core.storage.terms import TokenMerger, count_batch

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
        merger.add(
            count_batch({f: v[part] for f, v in fields.items()}, {n: (s, r[part]) for n, (s, r) in matrices.items()})
        )
    merger.finish()
    assert merger.vocab.tokens == ref_vocab.tokens
    for name in matrices:
        got = merger.tf(name)
        assert got.shape == (ref[name].shape[0], len(ref_vocab))
        assert got.indices.dtype == ref[name].indices.dtype
        np.testing.assert_array_equal(got.indptr, ref[name].indptr)
        np.testing.assert_array_equal(got.indices, ref[name].indices)
        np.testing.assert_array_equal(got.data, ref[name].data)
