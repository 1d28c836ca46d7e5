"""Mine (description, code) pairs from public repositories: the training data of ranklens's
code-search model (``scripts/build_model.py``).

A pair is a definition's doc comment or docstring (its first paragraph, markup and tags
dropped, at least :data:`MIN_WORDS` words) and the definition as the dense arm embeds it (its
breadcrumb, then its first :data:`CODE_LINES` lines, the way a long definition is pieced),
**with the documentation removed from the code side**, so the model learns to match a
description to code and not to its own comment. A second, masked copy of some pairs drops from
the code side every identifier whose words the description repeats, so the model learns what
code does and not only how it is spelt. The definitions of one file are kept together (their
``file`` id): the trainer's batches hold several of a file's pairs, so a definition's siblings
are its hard negatives, the choice the chunk step makes inside a top file.

Repositories come from snapshots the search tool's ``fetch`` brings to ``--mirror`` (bare git
directories, ``<mirror>/<owner>+<name>/repo``), or from any folder of git directories laid out
the same way; a missing one is listed, so a rerun after fetching it picks it up. Nothing else
is read. Excluded, always:

- a repository named (or prefixed: ``Kotlin/kotlinx`` is every ``kotlinx.*``) in
  ``training-exclusions.txt`` (what ranklens is measured on), case-insensitively;
- anything under ``vendor/``, ``third_party/``, ``_vendor/``, ``node_modules/`` (and the other
  copy folders in :data:`SKIP_DIRS`), and minified or generated files;
- a file byte-identical to one of the benchmark's repositories (``--bench``: its
  ``repos.tar.xz``), whatever repository it is found in.

Pairs are deduplicated by their normalised description + code. The output folder holds
``pairs.jsonl`` (one ``{"lang", "repo", "file", "desc", "code", "masked"}`` a line, in a fixed
order) and ``manifest.json`` (each repository's commit and pairs per language, and the
SHA-256 of ``pairs.jsonl``). The same snapshots give the same bytes.

    python scripts/mine_pairs.py --mirror /work/.mirror --out /tmp/ranklens-pairs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from ranklens.core.chunking import definitions  # noqa: E402
from ranklens.core.text.languages import language_for  # noqa: E402

#: The benchmark's 19 languages (and the repositories they come from, in no set of ranklens's).
REPOSITORIES: dict[str, list[str]] = {
    "python": [
        "pallets/jinja",
        "pallets/werkzeug",
        "psf/black",
        "python-attrs/attrs",
        "pytest-dev/pytest",
        "Textualize/rich",
        "marshmallow-code/marshmallow",
        "encode/uvicorn",
        "scrapy/scrapy",
        "tornadoweb/tornado",
        "celery/celery",
        "httpie/cli",
        "python-poetry/poetry",
        "fastapi/typer",
        "sqlalchemy/alembic",
        "sqlalchemy/sqlalchemy",
        "python/mypy",
        "pypa/pip",
        "Pylons/pyramid",
        "bottlepy/bottle",
        "encode/django-rest-framework",
        "getsentry/sentry-python",
        "numpy/numpy",
        "networkx/networkx",
        "boto/boto3",
    ],
    "javascript": [
        "koajs/koa",
        "fastify/fastify",
        "mochajs/mocha",
        "lodash/lodash",
        "Leaflet/Leaflet",
        "hapijs/hapi",
        "socketio/socket.io",
        "caolan/async",
        "immutable-js/immutable-js",
        "jquery/jquery",
        "chalk/chalk",
        "sindresorhus/got",
        "eslint/eslint",
        "Automattic/mongoose",
        "webpack/webpack",
        "chartjs/Chart.js",
        "markedjs/marked",
        "jashkenas/underscore",
        "jashkenas/backbone",
        "handlebars-lang/handlebars.js",
        "knex/knex",
        "sequelize/sequelize",
        "winstonjs/winston",
        "nodejs/undici",
        "mozilla/pdf.js",
        "moment/moment",
        "highlightjs/highlight.js",
        "yargs/yargs",
        "tj/commander.js",
        "babel/babel",
        "PrismJS/prism",
    ],
    "typescript": [
        "typeorm/typeorm",
        "honojs/hono",
        "mobxjs/mobx",
        "reduxjs/redux-toolkit",
        "TanStack/query",
        "vuejs/core",
        "date-fns/date-fns",
        "apollographql/apollo-client",
        "ionic-team/stencil",
        "remix-run/react-router",
        "sveltejs/svelte",
        "vitejs/vite",
        "microsoft/playwright",
        "statelyai/xstate",
        "immerjs/immer",
        "ReactiveX/rxjs",
        "prisma/prisma",
        "ajv-validator/ajv",
        "cheeriojs/cheerio",
        "pmndrs/zustand",
    ],
    "go": [
        "gorilla/mux",
        "labstack/echo",
        "gofiber/fiber",
        "urfave/cli",
        "sirupsen/logrus",
        "uber-go/zap",
        "stretchr/testify",
        "go-gorm/gorm",
        "etcd-io/bbolt",
        "junegunn/fzf",
        "spf13/viper",
        "hashicorp/raft",
        "nats-io/nats.go",
        "redis/go-redis",
        "caddyserver/caddy",
        "prometheus/prometheus",
        "cli/cli",
        "grpc/grpc-go",
        "dgraph-io/badger",
        "cockroachdb/pebble",
        "gohugoio/hugo",
        "etcd-io/etcd",
        "traefik/traefik",
        "containerd/containerd",
    ],
    "java": [
        "square/retrofit",
        "apache/commons-io",
        "apache/commons-collections",
        "mockito/mockito",
        "jhy/jsoup",
        "square/javapoet",
        "FasterXML/jackson-core",
        "ReactiveX/RxJava",
        "google/auto",
        "dropwizard/dropwizard",
        "apache/commons-text",
        "junit-team/junit4",
        "spring-projects/spring-framework",
        "netty/netty",
        "ben-manes/caffeine",
        "assertj/assertj",
        "eclipse-vertx/vert.x",
        "grpc/grpc-java",
    ],
    "php": [
        "composer/composer",
        "thephpleague/flysystem",
        "slimphp/Slim",
        "doctrine/dbal",
        "PHPMailer/PHPMailer",
        "briannesbitt/Carbon",
        "twigphp/Twig",
        "nikic/PHP-Parser",
        "symfony/console",
        "symfony/http-foundation",
        "ramsey/uuid",
        "filp/whoops",
        "sebastianbergmann/phpunit",
        "doctrine/orm",
        "cakephp/cakephp",
        "yiisoft/yii2",
        "phpstan/phpstan-src",
        "vimeo/psalm",
        "PHPOffice/PhpSpreadsheet",
        "thephpleague/commonmark",
        "symfony/symfony",
    ],
    "ruby": [
        "jekyll/jekyll",
        "heartcombo/devise",
        "hanami/hanami",
        "ruby-grape/grape",
        "sidekiq/sidekiq",
        "rspec/rspec-core",
        "faker-ruby/faker",
        "puma/puma",
        "lostisland/faraday",
        "teamcapybara/capybara",
        "thoughtbot/factory_bot",
        "ruby/rake",
        "rubocop/rubocop",
        "rubygems/rubygems",
        "Homebrew/brew",
        "fastlane/fastlane",
        "rspec/rspec-mocks",
        "rspec/rspec-expectations",
        "activeadmin/activeadmin",
        "simplecov-ruby/simplecov",
        "jnunemaker/httparty",
        "ruby/irb",
        "dry-rb/dry-validation",
    ],
    "scala": [
        "typelevel/cats-effect",
        "com-lihaoyi/fastparse",
        "com-lihaoyi/upickle",
        "scopt/scopt",
        "softwaremill/sttp",
        "typelevel/fs2",
        "scalatest/scalatest",
        "playframework/playframework",
        "monix/monix",
        "scala/scala",
        "twitter/finagle",
        "slick/slick",
        "sbt/sbt",
        "scalameta/scalameta",
    ],
    "rust": [
        "BurntSushi/ripgrep",
        "clap-rs/clap",
        "rust-lang/regex",
        "hyperium/hyper",
        "rayon-rs/rayon",
        "sharkdp/bat",
        "sharkdp/fd",
        "actix/actix-web",
        "tokio-rs/tracing",
        "dtolnay/anyhow",
        "seanmonstar/reqwest",
        "crossbeam-rs/crossbeam",
        "diesel-rs/diesel",
        "rust-lang/log",
        "dtolnay/syn",
    ],
    "elixir": [
        "elixir-lang/elixir",
        "absinthe-graphql/absinthe",
        "dashbitco/broadway",
        "elixir-tesla/tesla",
        "bitwalker/timex",
        "phoenixframework/phoenix_live_view",
        "oban-bg/oban",
        "elixir-nx/nx",
        "wojtekmach/req",
        "livebook-dev/livebook",
        "dashbitco/nimble_parsec",
        "elixir-ecto/postgrex",
        "ash-project/ash",
        "elixir-lang/ex_doc",
        "elixir-mint/mint",
        "swoosh/swoosh",
        "thoughtbot/ex_machina",
        "commanded/commanded",
        "nerves-project/nerves",
        "elixir-lang/gettext",
        "bencheeorg/benchee",
        "hexpm/hex",
    ],
    "csharp": [
        "AutoMapper/AutoMapper",
        "App-vNext/Polly",
        "serilog/serilog",
        "jbogard/MediatR",
        "FluentValidation/FluentValidation",
        "restsharp/RestSharp",
        "NLog/NLog",
        "xunit/xunit",
        "Humanizr/Humanizer",
        "JoshClose/CsvHelper",
        "StackExchange/StackExchange.Redis",
        "nunit/nunit",
        "dotnet/efcore",
        "MassTransit/MassTransit",
        "quartznet/quartznet",
        "npgsql/npgsql",
        "autofac/Autofac",
        "castleproject/Core",
        "moq/moq4",
        "dotnet/orleans",
    ],
    "kotlin": [
        "square/okhttp",
        "square/moshi",
        "square/leakcanary",
        "InsertKoinIO/koin",
        "coil-kt/coil",
        "arrow-kt/arrow",
        "square/wire",
        "mockk/mockk",
        "square/kotlinpoet",
        "kotest/kotest",
        "pinterest/ktlint",
        "cashapp/sqldelight",
        "detekt/detekt",
        "square/okio",
        "google/ksp",
        "airbnb/mavericks",
        "cashapp/turbine",
        "google/accompanist",
        "android/nowinandroid",
        "JakeWharton/mosaic",
    ],
    "swift": [
        "onevcat/Kingfisher",
        "SwiftyJSON/SwiftyJSON",
        "apple/swift-nio",
        "apple/swift-argument-parser",
        "pointfreeco/swift-composable-architecture",
        "Moya/Moya",
        "apple/swift-log",
        "Quick/Nimble",
        "apple/swift-collections",
        "groue/GRDB.swift",
        "daltoniam/Starscream",
        "apple/swift-algorithms",
        "apple/swift-syntax",
        "swiftlang/swift-format",
        "pointfreeco/swift-snapshot-testing",
        "mxcl/PromiseKit",
        "airbnb/lottie-ios",
        "danielgindi/Charts",
        "apple/swift-protobuf",
        "apple/swift-package-manager",
    ],
    "cpp": [
        "google/googletest",
        "catchorg/Catch2",
        "jbeder/yaml-cpp",
        "google/leveldb",
        "google/benchmark",
        "doctest/doctest",
        "CLIUtils/CLI11",
        "Tencent/rapidjson",
        "google/re2",
        "taskflow/taskflow",
        "microsoft/GSL",
        "jarro2783/cxxopts",
        "google/flatbuffers",
        "protocolbuffers/protobuf",
        "ocornut/imgui",
        "gabime/spdlog",
        "simdjson/simdjson",
        "facebook/rocksdb",
        "facebook/folly",
        "microsoft/terminal",
    ],
    "c": [
        "jqlang/jq",
        "DaveGamble/cJSON",
        "madler/zlib",
        "libevent/libevent",
        "lz4/lz4",
        "facebook/zstd",
        "tmux/tmux",
        "memcached/memcached",
        "yaml/libyaml",
        "json-c/json-c",
        "akheron/jansson",
        "libarchive/libarchive",
        "h2o/h2o",
        "Mbed-TLS/mbedtls",
        "nothings/stb",
        "lua/lua",
        "raysan5/raylib",
        "libsdl-org/SDL",
        "nginx/nginx",
        "libgit2/libgit2",
    ],
    "bash": [
        "pyenv/pyenv",
        "rbenv/rbenv",
        "tj/n",
        "dylanaraps/neofetch",
        "kward/shunit2",
        "dehydrated-io/dehydrated",
        "basherpm/basher",
        "docker/docker-bench-security",
        "ohmyzsh/ohmyzsh",
        "nodenv/nodenv",
        "asdf-vm/asdf",
        "dokku/dokku",
        "sdkman/sdkman-cli",
        "rvm/rvm",
        "zsh-users/zsh-autosuggestions",
        "shellspec/shellspec",
    ],
    "lua": [
        "nvim-lualine/lualine.nvim",
        "hrsh7th/nvim-cmp",
        "nvim-tree/nvim-tree.lua",
        "kikito/inspect.lua",
        "rxi/json.lua",
        "Kong/kong",
        "luarocks/luarocks",
        "lewis6991/gitsigns.nvim",
        "L3MON4D3/LuaSnip",
        "akinsho/bufferline.nvim",
        "Olivine-Labs/busted",
        "stevearc/oil.nvim",
        "williamboman/mason.nvim",
        "nvim-treesitter/nvim-treesitter",
        "LuaLS/lua-language-server",
        "folke/which-key.nvim",
        "folke/trouble.nvim",
        "ThePrimeagen/harpoon",
        "pkulchenko/ZeroBraneStudio",
        "openresty/lua-resty-core",
        "Yonaba/Moses",
    ],
    "haskell": [
        "haskell/cabal",
        "jaspervdj/hakyll",
        "PostgREST/postgrest",
        "haskell/attoparsec",
        "haskell/containers",
        "yesodweb/yesod",
        "haskell-servant/servant",
        "hedgehogqa/haskell-hedgehog",
        "haskell/text",
        "commercialhaskell/stack",
        "dhall-lang/dhall-haskell",
        "snoyberg/conduit",
        "haskell/haskell-language-server",
        "haskell/bytestring",
        "haskell/mtl",
        "ekmett/lens",
        "hspec/hspec",
        "haskell/network",
        "tweag/ormolu",
        "simonmar/async",
        "haskell/stm",
    ],
    "zig": [
        "tigerbeetle/tigerbeetle",
        "karlseguin/http.zig",
        "zigzap/zap",
        "mitchellh/libxev",
        "Vexu/arocc",
        "rockorager/libvaxis",
        "jetzig-framework/jetzig",
        "ikskuh/zig-args",
        "marler8997/zigup",
        "malcolmstill/zware",
        "kristoff-it/zine",
        "ghostty-org/ghostty",
        "zigtools/zig-lsp-codegen",
        "kristoff-it/superhtml",
        "hexops/mach",
        "zigimg/zigimg",
        "natecraddock/zf",
        "Snektron/vulkan-zig",
        "buzz-language/buzz",
        "ziglibs/known-folders",
    ],
}

#: Folders that hold copies of other projects' code (or generated code): never read.
SKIP_DIRS = frozenset(
    {
        "vendor",
        "vendored",
        "third_party",
        "third-party",
        "thirdparty",
        "_vendor",
        "node_modules",
        "bundled",
        "external",
        "extern",
        "deps",
        "dist",
        "build",
        "generated",
        ".git",
    }
)
#: Suffixes that mark generated or minified files.
SKIP_SUFFIXES = (".min.js", ".bundle.js", ".pb.go", "_pb2.py", ".generated.cs", ".g.cs", ".d.ts")
MIN_WORDS = 5
MAX_DESC_WORDS = 64
#: The code side: a definition's first lines, as a long one is pieced for the dense arm.
CODE_LINES = 40
MAX_FILE_BYTES = 300_000
#: At most this many files and pairs a repository, so no one project dominates a language.
MAX_FILES = 1_500
MAX_PAIRS = 2_500
#: The share of pairs that also get a masked copy.
MASKED_SHARE = 0.5
SEED = 20261203

_TAG_LINE = re.compile(
    r"^\s*([@:\\][A-Za-z]|\.\.\s|>>>|Args:|Arguments:|Returns?:|Raises:|Parameters|Example|See also|Note:)"
)
_MARKUP = re.compile(
    r":[a-z]+:`~?([^`]+)`|`+([^`]*)`+|\{@\w+\s+([^}]*)\}|\*\*?([^*]+)\*\*?|<[^>]+>|\[([^\]]*)\]\([^)]*\)"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_COMMENT_MARK = re.compile(r'^\s*(///?|//!|/\*\*?|\*/?|#+|--+\s?\|?|;+|"""|\'\'\'|@doc\s*"""|@moduledoc\s*"""|%)')
_TRIPLE = re.compile(r'("""|\'\'\')[\s\S]*?\1')
_STOPWORDS = frozenset(
    "the and for are but not you all any can has had her was one our out get set new use with this that from "
    "they will have when into than then them its also each which their there where what".split()
)
_BOILERPLATE = re.compile(r"(?i)licen[cs]e|copyright|todo|fixme|auto-?generated|do not edit|deprecated|\bspdx\b")


def excluded_names(path: Path) -> list[str]:
    """The owner/name prefixes of ``training-exclusions.txt``, lowercased."""
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line.lower())
    return out


def is_excluded(repo: str, exclusions: list[str]) -> bool:
    """True when ``repo`` is an excluded repository or starts with an excluded name (a prefix
    entry such as ``JamesNK/Newtonsoft`` stands for ``JamesNK/Newtonsoft.Json``)."""
    repo = repo.lower()
    return any(repo == e or repo.startswith(e) for e in exclusions)


def benchmark_hashes(tarball: Path | None) -> set[str]:
    """SHA-1 of every file in the benchmark's repositories (``repos.tar.xz``)."""
    if tarball is None or not tarball.exists():
        return set()
    hashes = set()
    with tarfile.open(tarball) as tar:
        for member in tar:
            if member.isfile():
                data = tar.extractfile(member).read()
                hashes.add(hashlib.sha1(data).hexdigest())
    return hashes


def skip_path(path: str) -> bool:
    parts = path.split("/")
    return any(p.lower() in SKIP_DIRS for p in parts[:-1]) or path.endswith(SKIP_SUFFIXES)


def description(doc: str) -> str | None:
    """The first paragraph of a docstring, markup and tags dropped; None when too short or
    boilerplate."""
    lines = []
    for line in doc.strip().splitlines():
        if not line.strip():
            if lines:
                break
            continue
        if _TAG_LINE.match(line):
            break
        lines.append(line.strip())
    text = " ".join(lines)
    text = _MARKUP.sub(lambda m: next((g for g in m.groups() if g), " "), text)
    text = re.sub(r"\s+", " ", text).strip()
    words = text.split()
    if len(_WORD.findall(text)) < MIN_WORDS or _BOILERPLATE.search(text):
        return None
    return " ".join(words[:MAX_DESC_WORDS])


def code_without_doc(text: str, doc: str) -> str:
    """The definition's text with its documentation removed: a docstring literal near its top
    and every comment line whose words are the docstring's."""
    m = _TRIPLE.search(text)
    if m and text.count("\n", 0, m.start()) < 6:
        text = text[: m.start()] + text[m.end() :]
    flat = re.sub(r"\s+", " ", doc).strip()
    kept = []
    for line in text.splitlines():
        mark = _COMMENT_MARK.match(line)
        if mark:
            body = re.sub(r"\s+", " ", line[mark.end() :]).strip().strip("*/").strip()
            if not body or body in flat or flat[:40] in body:
                continue
        kept.append(line)
    return "\n".join(kept).strip("\n")


def words_of(identifier: str) -> set[str]:
    out = set()
    for part in re.split(r"[_$]+", identifier):
        out.update(w.lower() for w in _CAMEL.findall(part))
    return out


def masked(code: str, desc: str) -> str | None:
    """``code`` without the identifiers whose words the description repeats (None when none)."""
    said = {w.lower() for w in _WORD.findall(desc) if len(w) > 2} - _STOPWORDS
    hit = False

    def drop(m: re.Match) -> str:
        nonlocal hit
        if words_of(m.group(0)) & said:
            hit = True
            return "_"
        return m.group(0)

    out = _IDENT.sub(drop, code)
    return out if hit else None


def snapshot_files(git_dir: Path, skip_languages: tuple[str, ...]) -> tuple[str, list[tuple[str, str, str]]]:
    """A snapshot's commit and its files worth reading, ``(path, blob sha, language)`` in
    git's order: none over MAX_FILE_BYTES, in a copy folder (:func:`skip_path`) or in one of
    ``skip_languages``."""
    git = ["git", "--git-dir", str(git_dir)]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    listing = subprocess.run([*git, "ls-tree", "-r", "-l", "HEAD"], capture_output=True, text=True, check=True).stdout
    entries = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, sha, size = meta.split()
        if kind != "blob" or not size.isdigit() or int(size) > MAX_FILE_BYTES or skip_path(path):
            continue
        lang = language_for(path)
        if lang not in skip_languages:
            entries.append((path, sha, lang))
    return commit, entries


def read_blobs(git_dir: Path, entries):
    """``(path, lang, bytes)`` of each ``(path, sha, lang)`` entry, through one ``git cat-file``."""
    proc = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        for path, sha, lang in entries:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            yield path, lang, data
    finally:
        proc.stdin.close()
        proc.wait()


def read_texts(git_dir: Path, entries, bench: set[str]):
    """:func:`read_blobs` as UTF-8 text, less binary files, files that are not UTF-8 and files
    byte-identical to one of the benchmark's (``bench``: their SHA-1s)."""
    for path, lang, data in read_blobs(git_dir, entries):
        if hashlib.sha1(data).hexdigest() in bench or b"\0" in data[:8000]:
            continue
        try:
            yield path, lang, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def mine_repo(git_dir: Path, repo: str, lang: str, bench: set[str], rng: random.Random):
    """The pairs of one repository (a bare git directory), and its commit."""
    commit, entries = snapshot_files(git_dir, ("text", "markdown", "json", "yaml", "toml"))
    entries.sort()
    rng.shuffle(entries)
    entries = entries[:MAX_FILES]
    pairs = []
    if not entries:
        return commit, pairs
    blobs = read_texts(git_dir, entries, bench)
    try:
        for path, file_lang, text in blobs:
            file_id = f"{repo}:{path}"
            for d in definitions(path, text, language=file_lang):
                desc = description(d.docstring) if d.docstring else None
                if desc is not None and d.symbol and desc.split(" ", 1)[0].strip("`'\"():") == d.symbol:
                    # Go's and others' "allowRequest reports whether ...": a question never starts
                    # with the name, so the description does not either.
                    rest = desc.split(" ", 1)[1] if " " in desc else ""
                    desc = rest if len(_WORD.findall(rest)) >= MIN_WORDS else None
                if desc is None:
                    continue
                body = code_without_doc(d.text, d.docstring)
                body = "\n".join(body.splitlines()[:CODE_LINES])
                if len(body.splitlines()) < 2:
                    continue
                code = f"{d.context}\n{body}"
                pairs.append(
                    {"lang": file_lang, "repo": repo, "file": file_id, "desc": desc, "code": code, "masked": False}
                )
                if rng.random() < MASKED_SHARE:
                    m = masked(code, desc)
                    if m is not None:
                        pairs.append(
                            {"lang": file_lang, "repo": repo, "file": file_id, "desc": desc, "code": m, "masked": True}
                        )
            if len(pairs) >= MAX_PAIRS:
                break
    finally:
        blobs.close()
    return commit, pairs[:MAX_PAIRS]


def snapshot_dir(mirror: Path, repo: str) -> Path | None:
    base = mirror / repo.replace("/", "+") / "repo"
    for candidate in (base, base / ".git"):
        if (candidate / "HEAD").exists() and (candidate / "objects").exists():
            return candidate
    return None


def unseen(pairs: list[dict], seen: set[str]) -> list[dict]:
    """The ``pairs`` whose normalised description + code is not in ``seen`` (added to it)."""
    kept = []
    for p in pairs:
        key = hashlib.sha1(
            (re.sub(r"\s+", " ", p["desc"].lower()) + "\0" + re.sub(r"\s+", " ", p["code"])).encode()
        ).hexdigest()
        if key not in seen:
            seen.add(key)
            kept.append(p)
    return kept


def write_pairs(out: Path, pairs: list[dict], manifest: dict, counts: dict[str, str] | None = None) -> None:
    """``pairs.jsonl`` (atomically) and ``manifest.json`` in ``out``: the manifest gains the
    pairs' SHA-256, their count per language (and per each ``counts`` field: ``{manifest key:
    pair field}``) and their number."""
    tmp = out / "pairs.jsonl.tmp"
    with tmp.open("w") as f:
        for p in pairs:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    os.replace(tmp, out / "pairs.jsonl")
    manifest["pairs_sha256"] = hashlib.sha256((out / "pairs.jsonl").read_bytes()).hexdigest()
    for key, field in {"pairs_per_language": "lang", **(counts or {})}.items():
        manifest[key] = dict(sorted(Counter(p[field] for p in pairs).items()))
    manifest["pairs"] = len(pairs)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(pairs)} pairs; missing {len(manifest['missing'])}, excluded {len(manifest['excluded'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="folder of fetched snapshots")
    parser.add_argument("--out", type=Path, default=Path("/tmp/ranklens-pairs"))
    parser.add_argument("--exclusions", type=Path, default=REPO_ROOT.parent / "shared/bench/training-exclusions.txt")
    parser.add_argument(
        "--bench",
        type=Path,
        default=REPO_ROOT.parent / "shared/bench/repos.tar.xz",
        help="the benchmark's repositories: files byte-identical to one are skipped",
    )
    parser.add_argument("--repo", action="append", help="mine only these owner/name (repeatable)")
    args = parser.parse_args(argv)
    if not args.exclusions.exists():
        print(f"mine_pairs: no exclusion list at {args.exclusions}", file=sys.stderr)
        return 2
    exclusions = excluded_names(args.exclusions)
    bench = benchmark_hashes(args.bench)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {"seed": SEED, "repositories": [], "missing": [], "excluded": []}
    seen: set[str] = set()
    all_pairs = []
    wanted = [(lang, r) for lang, repos in REPOSITORIES.items() for r in repos]
    if args.repo:
        wanted = [(lang, r) for lang, r in wanted if r in args.repo] or [("?", r) for r in args.repo]
    for lang, repo in wanted:
        if is_excluded(repo, exclusions):
            manifest["excluded"].append(repo)
            continue
        git_dir = snapshot_dir(args.mirror, repo)
        if git_dir is None:
            manifest["missing"].append(repo)
            continue
        rng = random.Random(f"{SEED}:{repo}")
        commit, pairs = mine_repo(git_dir, repo, lang, bench, rng)
        kept = unseen(pairs, seen)
        all_pairs.extend(kept)
        per_lang = Counter(p["lang"] for p in kept)
        manifest["repositories"].append({"repo": repo, "commit": commit, "pairs": dict(sorted(per_lang.items()))})
        print(f"{repo:45s} {commit[:10]} {len(kept):6d} pairs", flush=True)
    write_pairs(args.out, all_pairs, manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
