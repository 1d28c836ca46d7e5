"""ranklens engine: discovery, chunking, retriever arms, fusion and the persistent index.

This package never imports textual; the terminal UI lives in ``tui``.

Its packages, by what they do. A package imports only from packages of a lower tier (the rows
above its own; ``tests/test_layers.py`` checks every import, module-level, lazy or typing):

====  ==============  ==================================================================
tier  package         what it holds
====  ==============  ==================================================================
0     ``base``        plain data (Chunk, Hit …), errors, RRF arithmetic, the handoff format,
                      atomic writes, the SQLite binding, file locks
1     ``text``        reading code as text: languages, tokens, names, credentials, the
                      static embedding
1     ``vectors``     int8/float32 vector scans and the optional usearch index
2     ``chunking``    tree-sitter chunking along definitions, windows for the rest
2     ``discovery``   listing a tree: git or a walk, ignore rules, reading files
2     ``storage``     what an index is on disk: layout, segments, chunk table, BM25 matrices
3     ``arms``        the retriever registry, its protocol and the arms (deep/ inside)
4     ``query``       a query's pipeline: grouping, fusion, the ranking stage, the chunk step,
                      labels; its settings and a root's config
5     ``graph``       following the code: each segment's index of the names chunks use and
                      define, resolution by closeness, a unit's callers, callees and tests
6     ``index``       building an index and keeping it fresh: indexer, freshness, watch
6     ``evaluation``  labelled queries, metrics, runs, reports, tuning
7     ``backends``    where an index lives: local, or a Milvus collection
8     (this folder)   the surfaces: ``engine`` (one root's index and queries),
                      ``milvus_engine``, ``service``, ``session``, ``walk`` (the UI's trail),
                      ``agent``, ``handoff``, ``judgments``, ``navigate`` (related and
                      more-like-this for every front end)
====  ==============  ==================================================================

Data beside them: ``models/`` (the bundled embedding model, the deep arm's tokenizer),
``schemas/`` (the handoff JSON Schema) and ``calibration.json`` (the confidence figures).
The packages' own ``__init__`` files are their maps. Those of base, text, storage, query, graph
and index import nothing, so a module of one loads no other (a warm query never loads the indexer).
"""

__version__ = "0.1.0"
