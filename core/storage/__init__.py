"""What an index is on disk, and how a committed generation opens for reading.

``store``       the index folder's layout, the SQLite schema, connect, IndexView (one open
                generation), pack_text / unpack_text
``segments``    the segment manifest of a generation and the plan of which segments merge
``chunktable``  per-segment chunk metadata: paths, lines, symbols, breadcrumbs
``columns``     coded and packed string columns the chunk table is made of
``bm25``        the BM25 term matrix a query scores: its segments' postings, the corpus statistics,
                the vocabulary as a query reads it
``terms``       counting tokens into term frequencies while indexing: the vocabulary as it grows,
                the token batches the chunking workers count and their merge
"""
