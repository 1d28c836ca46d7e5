"""What counts as a definition, per language: one :class:`Spec` a language, by family.

=====================  ==========================================
module                 languages
=====================  ==========================================
:mod:`.scripting`      Python, Ruby, Lua, shell (bash)
:mod:`.web`            JavaScript, TypeScript, TSX, PHP
:mod:`.systems`        C, C++, Go, Rust, Zig
:mod:`.managed`        Java, Kotlin, Scala, C#, Swift
:mod:`.functional`     Haskell, Elixir
:mod:`.markup`         Markdown
=====================  ==========================================

A language gets definitions when it is in :data:`core.text.languages.TREE_SITTER_LANGUAGES` and
has a spec here: adding one is a spec (and its readers, if its grammar's fields do not say
enough) in its family's module. :class:`Spec` and the readers' contract are in :mod:`.base`.
"""

from __future__ import annotations

from . import functional, managed, markup, scripting, systems, web
from .base import DEFINITION, SECTION, Spec

SPECS: dict[str, Spec] = {
    **scripting.SPECS,
    **web.SPECS,
    **systems.SPECS,
    **managed.SPECS,
    **functional.SPECS,
    **markup.SPECS,
}

__all__ = ["DEFINITION", "SECTION", "SPECS", "Spec"]
