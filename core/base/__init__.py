"""The bottom layer: plain data, errors and file primitives. Imports nothing else of core.

``types``           Chunk, Hit, ConsolidatedHit and the other values every stage passes on
``errors``          RequestError: what a front end reports as the caller's mistake
``rrf``             weighted Reciprocal Rank Fusion: the arithmetic and the checks of k and weights
``handoff_schema``  the published handoff format: its version, JSON Schema and validation
``atomic``          atomic file writes and folder publishing (readers see old or new, never half)
``npyfile``         thread-safe reads of .npy/.npz files
``_sqlite``         the one SQLite binding every module connects through
``locks``           budgeted cross-process file locks
``install_hint``    the pip command that adds an extra to this installation
"""
