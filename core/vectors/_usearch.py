"""usearch's exact float16 scan, imported so that it cannot break C++ extensions loaded after it.

The one import-order constraint left, and why it must stay
----------------------------------------------------------
usearch 2.26.6's Linux wheel (the newest on PyPI) links its own copy of libstdc++ statically
into ``usearch/compiled*.so`` and exports all of it (``nm -D``: 4,799 symbols, 107 of them
``STB_GNU_UNIQUE``). numpy has already loaded the system ``libstdc++.so.6``, and the dynamic
linker binds usearch's references to unique symbols process-wide, whatever ``RTLD_LOCAL``
says: ``LD_DEBUG=bindings`` shows 82 of usearch's symbols bound to ``libstdc++.so.6``,
among them every locale facet id (``std::numpunct<char>::id``, ``std::num_put<…>::id`` …).
When usearch's module initialises, its private copy of ``std::locale`` numbers those shared
ids from its own counter (read back with ctypes: ``numpunct<char>`` 33, ``num_put<char>`` 5,
``moneypunct<char,false>`` 35 while the system copy's ``ctype<char>`` is still 0). The system
``libstdc++.so.6``, initialising its own locale later, numbers its facets from its own
counter around those: six facet slots (3-8) end up shared by two facets each, so
``std::use_facet`` hands back the wrong facet. onnxruntime 1.32's extension is the first to
ask for one: it calls a virtual method of what is really a ``codecvt<char32_t>`` facet and
dies with SIGSEGV at import (gdb: ``codecvt<char16_t,char,__mbstate_t>::do_unshift`` called
from ``onnxruntime_pybind11_state``). When the system library's locale is initialised first,
every id is numbered by it and no slot is shared; onnxruntime then loads (it is what the
previous work-around did, by importing all of onnxruntime, ~125 ms, before usearch).

So :func:`index` first initialises the system library's classic locale through its exported
``std::locale::classic()`` (~0.8 ms, once), then imports usearch. That protects every C++
extension loaded later, not only onnxruntime's. Only this module imports usearch; the int8
companions are scanned with numkong (:mod:`core.vectors.scan`), which usearch loads as a
plain C library and which has no such state.

The simsimd work-around is gone with simsimd: usearch's ``__init__`` loads numkong's
extension with ``RTLD_GLOBAL``, and numkong (simsimd's successor) exports the helper names
simsimd 6.5 also exports (``parse_tensor``, ``same_string``, ``static_capabilities``), so a
simsimd loaded afterwards bound its own calls to numkong's (``LD_DEBUG=bindings``) and
misread every tensor ("Input tensors must have matching datatypes"). numkong itself works in
either order.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

#: usearch threads for one exact query: it splits the scan across cores.
THREADS = max(1, min(os.cpu_count() or 1, 8))

_locale_ready = False


def _initialise_system_locale() -> None:
    """Number the system libstdc++'s locale facets before usearch's copy can (see above)."""
    global _locale_ready
    if _locale_ready or not sys.platform.startswith("linux"):
        return
    _locale_ready = True
    try:
        classic = ctypes.CDLL("libstdc++.so.6")._ZNSt6locale7classicEv  # std::locale::classic()
    except (OSError, AttributeError):  # another C++ runtime: nothing of this applies
        return
    classic.restype = ctypes.c_void_p
    classic()


def index():
    """``usearch.index``, imported once the system C++ runtime's locale is initialised."""
    if "usearch.index" not in sys.modules:
        _initialise_system_locale()
    import usearch.index

    return usearch.index


def exact(vecs16: np.ndarray, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices and cosine distances of the ``count`` float16 rows nearest ``query``
    (sorted), by usearch's exact multi-threaded scan: no copy of the vectors."""
    count = min(count, len(vecs16))
    if count <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    matches = index().search(vecs16, query, count, "cos", exact=True, threads=THREADS)
    return matches.keys.astype(np.int64, copy=False), matches.distances.astype(np.float32, copy=False)
