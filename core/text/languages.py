"""Language names from file paths.

One name per language, shared by chunking (which tree-sitter grammar to use), the
indexer (what to store per chunk) and the preview (which pygments lexer to pick): the
names are pygments aliases where one exists, so ``pygments.lexers.get_lexer_by_name``
accepts them as they are.
"""

from __future__ import annotations

import posixpath

#: Languages for which chunking extracts tree-sitter definitions (the names are also the
#: grammar names of ``tree_sitter_language_pack``, except ``shell``: its grammar is ``bash``).
TREE_SITTER_LANGUAGES: frozenset[str] = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "ruby",
        "markdown",
        "csharp",
        "kotlin",
        "scala",
        "swift",
        "php",
        "haskell",
        "elixir",
        "lua",
        "zig",
        "shell",
    }
)

#: Lower-cased extension (without the dot) -> language.
EXTENSIONS: dict[str, str] = {
    # tree-sitter languages
    "py": "python",
    "pyi": "python",
    "pyw": "python",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascript",
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c",
    "h": "c",  # could be C++; C's grammar parses both well enough for definitions
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "c++": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "hxx": "cpp",
    "h++": "cpp",
    "ipp": "cpp",
    "rb": "ruby",
    "rake": "ruby",
    "gemspec": "ruby",
    "md": "markdown",
    "markdown": "markdown",
    "mdx": "markdown",
    # others: plain names for the preview's highlighting and the index's metadata
    "json": "json",
    "jsonc": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "ini": "ini",
    "cfg": "ini",
    "sh": "shell",
    "bash": "shell",
    "bats": "shell",  # Bats test files: Bash with @test blocks
    "zsh": "shell",
    "fish": "fish",
    "ps1": "powershell",
    "html": "html",
    "htm": "html",
    "xml": "xml",
    "svg": "xml",
    "css": "css",
    "scss": "scss",
    "less": "less",
    "sql": "sql",
    "rst": "rst",
    "txt": "text",
    "kt": "kotlin",
    "kts": "kotlin",
    "swift": "swift",
    "cs": "csharp",
    "php": "php",
    "scala": "scala",
    "sc": "scala",
    "lua": "lua",
    "pl": "perl",
    "pm": "perl",
    "r": "r",
    "jl": "julia",
    "hs": "haskell",
    "ml": "ocaml",
    "mli": "ocaml",
    "ex": "elixir",
    "exs": "elixir",
    "erl": "erlang",
    "clj": "clojure",
    "dart": "dart",
    "zig": "zig",
    "nim": "nim",
    "vue": "vue",
    "svelte": "html",
    "proto": "protobuf",
    "graphql": "graphql",
    "gql": "graphql",
    "tf": "terraform",
    "cmake": "cmake",
    "mk": "make",
    "dockerfile": "docker",
    "m": "objective-c",
    "mm": "objective-c",
    "bat": "batch",
    "cmd": "batch",
    "diff": "diff",
    "patch": "diff",
}

#: Exact basenames that say more than their (missing) extension.
BASENAMES: dict[str, str] = {
    "Rakefile": "ruby",
    "Gemfile": "ruby",
    "Guardfile": "ruby",
    "Vagrantfile": "ruby",
    "Podfile": "ruby",
    "Makefile": "make",
    "makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "docker",
    "CMakeLists.txt": "cmake",
    "BUILD": "python",  # Starlark is close enough to Python for highlighting
    "WORKSPACE": "python",
    ".bashrc": "shell",
    ".bash_profile": "shell",
    ".zshrc": "shell",
    ".profile": "shell",
}


#: Every name :func:`language_for` gives: what a language filter (``--lang``, MCP ``language``) can match.
LANGUAGE_NAMES: tuple[str, ...] = tuple(sorted({*EXTENSIONS.values(), *BASENAMES.values(), "text"}))


def language_for(path: str) -> str:
    """The language of a file, from its basename or extension.

    Parameters
    ----------
    path : str
        POSIX path (relative or absolute); only the basename is looked at.

    Returns
    -------
    str
        A language name such as ``"python"`` or ``"cpp"``; ``"text"`` when unknown.
    """
    base = posixpath.basename(path)
    if base in BASENAMES:
        return BASENAMES[base]
    if base.startswith("Dockerfile."):
        return "docker"
    _, dot, ext = base.rpartition(".")
    if not dot or not ext:
        return "text"
    return EXTENSIONS.get(ext.lower(), "text")
