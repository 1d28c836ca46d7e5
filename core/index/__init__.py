"""Building an index and keeping it fresh.

``indexer``    one pass: discover, plan, and every arm builds its part of a new segment and
               generation from the chunked batches, committed atomically; merge, clean up
``batches``    the chunked batches a pass is fed: what the chunking workers do (read, chunk,
               count tokens, embed), the files' order, the batches' and segments' sizes
``freshness``  whether anything changed since the last pass: a stat pass over a snapshot
``watch``      inotify watches that narrow that stat pass to what changed
``workers``    an ordered map over child interpreters (chunking a large update)
``applied``    the discovery options an index was built with, read without the indexer
"""
