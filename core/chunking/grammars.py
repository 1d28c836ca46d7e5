"""tree-sitter grammars, loaded once per language, and parsers, one per thread and language.

``Parser(language)`` costs ~1 µs with the ``Language`` cached (``get_parser`` ~5-12 µs)
against milliseconds of parsing, so one parser per thread and language is kept in a
``threading.local``: never shared between threads, never rebuilt per file. tree_sitter and
the language pack are imported on first use: a missing wheel must not break windows.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..text.languages import TREE_SITTER_LANGUAGES
from .specs import SPECS, Spec

if TYPE_CHECKING:
    from tree_sitter import Parser


class Grammar:
    """A language's tree-sitter ``Language`` and compiled definition ``Query``."""

    def __init__(self, name: str, spec: Spec) -> None:
        from tree_sitter import Query  # deferred: a missing wheel must not break windows
        from tree_sitter_language_pack import get_language

        self.name = name
        self.spec = spec
        self.language = get_language(spec.grammar or name)  # type: ignore[arg-type]
        patterns = [f"({t}) @def" for t in spec.defs] + list(spec.patterns)
        valid = []
        for p in patterns:  # drop patterns a grammar version does not know, keep the rest
            try:
                Query(self.language, p)
            except Exception:
                continue
            valid.append(p)
        self.query = Query(self.language, "\n".join(valid)) if valid else None
        self._patterns = valid
        self._refs: Query | bool | None = False  # compiled on first use
        self._both: Query | bool | None = False

    @property
    def refs_query(self):
        """The query of the names code uses (:func:`core.chunking.refs.reference_query`)."""
        if self._refs is False:
            from .refs import reference_query

            self._refs = reference_query(self.language)
        return self._refs

    @property
    def both_query(self):
        """The definitions' patterns and :attr:`refs_query`'s in one query: one walk of the
        tree captures both (two walks cost 1.6-2 times one)."""
        if self._both is False:
            from .refs import reference_patterns

            refs = reference_patterns(self.language)
            self._both = None
            if self._patterns and refs:
                from tree_sitter import Query

                self._both = Query(self.language, "\n".join(self._patterns + refs))
        return self._both


_grammars: dict[str, Grammar | None] = {}
_grammars_lock = threading.Lock()
_local = threading.local()


def grammar_for(language: str) -> Grammar | None:
    """The cached grammar of a language, or None when it has no definition support."""
    if language in _grammars:
        return _grammars[language]
    with _grammars_lock:
        if language not in _grammars:
            spec = SPECS.get(language)
            grammar = None
            if spec is not None and language in TREE_SITTER_LANGUAGES:
                try:
                    grammar = Grammar(language, spec)
                except Exception:  # grammar missing from the installed pack
                    grammar = None
            _grammars[language] = grammar
    return _grammars[language]


def parser_for(grammar: Grammar) -> Parser:
    """This thread's parser for a grammar (a tree-sitter Parser is not thread-safe)."""
    parsers = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(grammar.name)
    if parser is None:
        from tree_sitter import Parser

        parser = parsers[grammar.name] = Parser(grammar.language)
    return parser
