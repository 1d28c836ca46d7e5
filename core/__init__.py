"""ranklens engine: discovery, chunking, retriever arms, fusion and the persistent index.

This package never imports textual; the terminal UI lives in ``tui``.
"""

__version__ = "0.1.0"
