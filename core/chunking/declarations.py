"""Whether a chunk only declares (names, fields, signatures, constants) or shows behaviour.

A question asking *how* something happens is answered by code that does it: a chunk of
struct fields, an interface's method signatures or a table of constants names the concept
(often more often than the code that acts on it) and outranks it on words alone. The chunk
step demotes such a unit (:mod:`core.query.chunkstep`, ``Params.chunk_declaration``); this
module says which chunks they are, once, when a file is chunked (``Chunk.declaration``,
kept in the chunk table).

A chunk is a *declaration* when fewer than :data:`BEHAVIOUR_SHARE` of its code lines show
behaviour. Comment lines, docstrings and blank lines are not code lines. A line shows
behaviour when it holds a control-flow word (:data:`CONTROL`) or a call that is not a
definition, import or signature line. Any language: the words and shapes are those most
languages share; issue #42 measured it in the chunk step's own form first
(``evals/infile_probe.py``: won 8, lost 1 on the span set).
"""

from __future__ import annotations

import re

#: Below this share of behaviour lines among a chunk's code lines, it is a declaration.
BEHAVIOUR_SHARE = 0.25

#: Control-flow words (whole words): a line holding one does something (also how navigation
#: tells a call from a C prototype).
CONTROL = re.compile(
    r"\b(?:if|else|elif|elsif|for|foreach|while|do|switch|case|return|yield|await|throw|raise|"
    r"try|catch|except|finally|rescue|ensure|break|continue|goto|defer|unless|until)\b"
    r"|\bwhen\s*[({]|\bmatch\s+[^:=]*\{\s*$"
)

#: A call: a name (or a closing bracket, or a generic's ``>``) right before ``(``.
_CALL = re.compile(r"[\w\]\)>!?]\s*\(")

#: Lines that hold a call's shape but do not act: definitions and signatures, imports,
#: decorators and annotations.
_NOT_ACTING = re.compile(
    r"""\s*(?:
        @                                                      # decorator, annotation
      | \#\s*(?:include|import|define|pragma|if|endif)\b          # preprocessor
      | (?:import|from|use|using|require|require_relative|include|extern|package|namespace|module)\b
      | (?:(?:export|default|pub(?:\([\w\s]*\))?|public|private|protected|internal|static|final|abstract|
            override|open|async|unsafe|const|inline|virtual|sealed|suspend|operator|extern|
            partial|readonly|fileprivate|lazy|mutating|local)\s+)*
        (?:def|defp|defmacro|fn|func|fun|function|sub|proc|class|struct|interface|trait|impl|enum|
            union|type|typedef|object|record|protocol|extension|constructor|data|newtype|instance)
        \b\s*[\w$*&<(\[]
    )""",
    re.VERBOSE,
)

#: A C-family signature: a return type then a name then its parameters, nothing assigned or
#: returned (``static int uv_run(uv_loop_t* loop, uv_run_mode mode) {``, ``void close();``).
SIGNATURE = re.compile(
    r"\s*(?:[\w:<>\[\],*&]+\s+)+[*&]*[\w:~]+\s*\([^=()]*(?:\([^()]*\)[^=()]*)*\)\s*"
    r"(?:const|noexcept|override|throws\s+[\w.,\s]+|->\s*[\w:<>\[\],*&\s]+|:\s*[\w<>\[\],?\s.]+)*\s*[{;]?\s*$"
)

#: A method signature in an interface or a protocol (no return type before the name): the
#: parameters typed (``w ResponseWriter``, ``err: Error``) or a result type after them
#: (``Close() error``, ``size(): number;``), nothing assigned.
_METHOD_SIGNATURE = re.compile(
    r"\s*[\w$]+\??\s*(?:<[^>]*>)?\s*\((?:[^()=]*(?:\w\s*:\s*\S|\w\s+[*&\[\]\w.]+)[^()=]*)?\)"
    r"(?:\s*(?::|->)?\s*[\w$.*<>\[\]|, ()?]+?)?\s*[;,]?\s*$"
)
_BARE_CALL = re.compile(r"\s*[\w$]+\s*\(\s*\)\s*;?\s*$")

#: Comment starts, whatever the language (a line starting so is not code).
_COMMENT = re.compile(r"\s*(?://|/\*|\*|#(?![\[!])|--|;;|%|<!--|\"\"\"|'''|\"\s*$)")

#: A code line holds a word (a line of brackets only, ``}`` or ``});``, is not counted).
_WORD = re.compile(r"\w")

#: Docstring fences (Python, and the other languages' block strings that stand alone).
_FENCE = re.compile(r'\s*[rRbBuU]?("""|\'\'\')')


def code_lines(text: str) -> list[str]:
    """The chunk's code lines: not blank or brackets only, not a comment, not inside a
    docstring."""
    out = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            if fence in line:
                fence = None
            continue
        m = _FENCE.match(line) if ('"""' in line or "'''" in line) else None
        if m:
            quote = m.group(1)
            rest = line[m.end() :]
            if quote not in rest:
                fence = quote
            continue
        if not _WORD.search(line) or _COMMENT.match(line):
            continue  # blank, brackets only, or a comment
        out.append(line)
    return out


def acts(line: str) -> bool:
    """Whether a code line shows behaviour: a control-flow word, or a call on a line that is
    not a definition, signature, import or decorator."""
    if CONTROL.search(line):
        return True
    if not _CALL.search(line) or _NOT_ACTING.match(line):
        return False
    if SIGNATURE.match(line):
        return False
    return _BARE_CALL.match(line) is not None or not _METHOD_SIGNATURE.match(line)


def is_declaration(text: str) -> bool:
    """Whether fewer than :data:`BEHAVIOUR_SHARE` of the chunk's code lines show behaviour
    (a chunk with no code line at all, only comments, is not flagged: it declares nothing)."""
    lines = code_lines(text)
    if not lines:
        return False
    # Decided as soon as the count can no longer change the answer: most chunks are
    # behaviour and reach the share in their first lines (a quarter of a cold build's
    # chunking when every line was read).
    needed = BEHAVIOUR_SHARE * len(lines)
    acting, left = 0, len(lines)
    for line in lines:
        left -= 1
        if acts(line):
            acting += 1
            if acting >= needed:
                return False
        elif acting + left < needed:
            return True
    return True
