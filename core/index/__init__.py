"""Building an index and keeping it fresh.

``indexer``    one pass: discover, chunk, count tokens, and every arm builds its part of a new
               segment and generation, committed atomically
``freshness``  whether anything changed since the last pass: a stat pass over a snapshot
``watch``      inotify watches that narrow that stat pass to what changed
``workers``    an ordered map over child interpreters (chunking a large update)
``applied``    the discovery options an index was built with, read without the indexer
"""
