"""Following the code: the edges between units, and the walks along them.

A unit's *uses* are the names its code spells in positions that refer to a definition
(core/chunking/refs.py, read while chunking). From them, name-based, as search-based code
navigation resolves: a unit's callees are the definitions of the names it uses; its callers
the units that use its name; callers in test files are its tests. A name several units define
resolves to the closest: same file, then a module the using file imports, then the same
directory, then anywhere.

``uses``     a name's stable hash; a segment's inverted index of uses (name -> chunks)
``build``    the index's part that writes it with each segment, as an arm's part is written
``edges``    a committed generation's uses across segments; Graph, what navigation asks
``resolve``  which definition a name means from where it is used (Closeness)
``related``  a unit's neighbourhood: callers, callees, tests (ranklens related, MCP, the UI)
``span``     a hit's: each definition it packs, their neighbourhoods merged
``like``     more like this: a question made of what a unit reveals
``within``   a file's own call edges, which the chunk step's lift reads
"""
