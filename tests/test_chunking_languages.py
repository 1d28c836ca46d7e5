"""Definition chunking of C#, Kotlin, Scala, Swift, PHP, Haskell, Elixir, Lua, Zig and Bash.

One test per language on a small idiomatic file: every kind of definition found with its
name, signature, doc comment and breadcrumb, then the file cut under a tight budget and the
default one without losing a line (see :func:`check_budget`).
"""

import textwrap

import pytest
from test_chunking import budgeted_length

from ranklens.core.arms import symbols as symbols_arm
from ranklens.core.chunking import DEFAULT_OVERLAP, DEFAULT_WINDOW, chunk_file, definitions
from ranklens.core.text.languages import TREE_SITTER_LANGUAGES, language_for


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def spans(chunks):
    return {c.context: (c.start_line, c.end_line) for c in chunks if c.kind != "window"}


def defs(chunks):
    return {c.context: c for c in chunks if c.kind != "window"}


def check_budget(path: str, text: str) -> None:
    """Under a tight budget (8 lines) and the default one: no chunk over the budget, no
    non-blank line outside every chunk, every definition that fits lying whole in one chunk,
    and the file cut along its definitions rather than into windows."""
    lines = text.rstrip("\n").split("\n")
    non_blank = {i for i, line in enumerate(lines, 1) if line.strip()}
    for window, overlap in ((8, 2), (DEFAULT_WINDOW, DEFAULT_OVERLAP)):
        chunks = chunk_file(path, text, window=window, overlap=overlap)
        covered: set[int] = set()
        for c in chunks:
            assert budgeted_length(c, lines) <= window, c.docid
            assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
            if c.piece_of is not None:
                assert c.piece_of[0] <= c.start_line <= c.end_line <= c.piece_of[1]
            covered.update(range(c.start_line, c.end_line + 1))
        assert covered >= non_blank, sorted(non_blank - covered)
        assert len({c.docid for c in chunks}) == len(chunks)
        for d in definitions(path, text):
            if d.end_line - d.start_line + 1 <= window:
                assert any(c.start_line <= d.start_line and d.end_line <= c.end_line for c in chunks), d.docid
        assert sum(c.kind != "window" for c in chunks) > sum(c.kind == "window" for c in chunks)


@pytest.mark.parametrize(
    "path, language",
    [
        ("src/Json/JsonConvert.cs", "csharp"),
        ("src/Job.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("core/Functor.scala", "scala"),
        ("scripts/release.sc", "scala"),
        ("Sources/Vapor/Router.swift", "swift"),
        ("src/Support/Collection.php", "php"),
        ("src/Text/Pandoc.hs", "haskell"),
        ("lib/phoenix/router.ex", "elixir"),
        ("test/router_test.exs", "elixir"),
        ("lua/telescope/pickers.lua", "lua"),
        ("src/main.zig", "zig"),
        ("bin/run.sh", "shell"),
        ("lib/common.bash", "shell"),
        ("test/run.bats", "shell"),
    ],
)
def test_the_new_languages_are_detected_and_chunked(path, language):
    assert language_for(path) == language
    assert language in TREE_SITTER_LANGUAGES


# ------------------------------------------------------------------------------------- C#

CSHARP = src(
    """
    using System;
    using System.Collections.Generic;

    namespace Geometry.Shapes
    {
        /// <summary>
        /// A shape with an area.
        /// </summary>
        public interface IShape
        {
            /// <summary>The area, in square <see cref="Unit"/>s.</summary>
            double Area();
        }

        public delegate void ShapeChanged(IShape shape);

        public enum Unit { Millimetre, Centimetre }

        public record Point(double X, double Y);

        /// <summary>A circle.</summary>
        [Serializable]
        public sealed class Circle : IShape
        {
            private readonly double _radius;

            /// <summary>Makes a circle.</summary>
            /// <param name="radius">The radius, in millimetres.</param>
            public Circle(double radius)
            {
                _radius = radius;
            }

            // The radius in the given unit.
            public double Radius { get; set; }

            public double Area() => Math.PI * _radius * _radius;

            public static Circle operator +(Circle a, Circle b) => new Circle(a._radius + b._radius);

            public event ShapeChanged Changed { add { } remove { } }

            public double this[int axis] => _radius;

            ~Circle() { }

            private struct Cache
            {
                public double Value;
            }
        }
    }
    """
)

CSHARP_FILE_SCOPED = src(
    """
    namespace Geometry.Util;

    public static class Extensions
    {
        public static T Largest<T>(this IEnumerable<T> items) where T : IShape
        {
            return default;
        }
    }
    """
)


def test_csharp_definitions():
    path = "src/Circle.cs"
    chunks = definitions(path, CSHARP)
    ns = f"{path} > Geometry.Shapes"
    assert spans(chunks) == {
        f"{ns} > IShape": (9, 13),
        f"{ns} > IShape > Area": (12, 12),
        f"{ns} > ShapeChanged": (15, 15),
        f"{ns} > Unit": (17, 17),
        f"{ns} > Point": (19, 19),
        f"{ns} > Circle": (22, 51),
        f"{ns} > Circle > Circle": (29, 32),
        f"{ns} > Circle > Radius": (35, 35),
        f"{ns} > Circle > Area": (37, 37),
        f"{ns} > Circle > operator +": (39, 39),
        f"{ns} > Circle > Changed": (41, 41),
        f"{ns} > Circle > this[]": (43, 43),
        f"{ns} > Circle > ~Circle": (45, 45),
        f"{ns} > Circle > Cache": (47, 50),
    }
    d = defs(chunks)
    shape = d[f"{ns} > IShape"]
    assert (shape.symbol, shape.signature) == ("IShape", "public interface IShape")
    assert shape.docstring == "A shape with an area."
    assert d[f"{ns} > IShape > Area"].signature == "double Area()"
    assert d[f"{ns} > IShape > Area"].docstring == "The area, in square Units."
    assert d[f"{ns} > ShapeChanged"].signature == "public delegate void ShapeChanged(IShape shape)"
    assert d[f"{ns} > Point"].signature == "public record Point(double X, double Y)"
    circle = d[f"{ns} > Circle"]
    assert circle.signature == "[Serializable] public sealed class Circle : IShape"
    assert circle.docstring == "A circle."
    assert circle.text.startswith("    [Serializable]")
    ctor = d[f"{ns} > Circle > Circle"]
    assert ctor.signature == "public Circle(double radius)"
    assert ctor.docstring == "Makes a circle.\nradius: The radius, in millimetres."
    assert d[f"{ns} > Circle > Radius"].signature == "public double Radius"
    assert d[f"{ns} > Circle > Radius"].docstring == "The radius in the given unit."
    assert d[f"{ns} > Circle > Area"].signature == "public double Area()"
    assert d[f"{ns} > Circle > operator +"].signature == "public static Circle operator +(Circle a, Circle b)"
    # A file-scoped namespace scopes every declaration after it.
    scoped = definitions("src/Extensions.cs", CSHARP_FILE_SCOPED)
    assert spans(scoped) == {
        "src/Extensions.cs > Geometry.Util > Extensions": (3, 9),
        "src/Extensions.cs > Geometry.Util > Extensions > Largest": (5, 8),
    }
    assert defs(scoped)["src/Extensions.cs > Geometry.Util > Extensions > Largest"].signature == (
        "public static T Largest<T>(this IEnumerable<T> items) where T : IShape"
    )
    check_budget(path, CSHARP)
    # Definitions packed together keep the namespace they share in their breadcrumb.
    (first,) = [c for c in chunk_file(path, CSHARP) if c.start_line == 1]
    assert first.context == f"{ns} > IShape, ShapeChanged, Unit, Point"


# --------------------------------------------------------------------------------- Kotlin

KOTLIN = src(
    """
    package io.example.cache

    import kotlinx.coroutines.flow.Flow

    /**
     * A key-value cache.
     */
    interface Cache<K, V> {
        fun get(key: K): V?
        fun put(key: K, value: V)
    }

    typealias Loader<K, V> = suspend (K) -> V

    // Evicts the least recently used entry.
    class LruCache<K, V>(private val capacity: Int) : Cache<K, V> {
        private val map = LinkedHashMap<K, V>()

        constructor() : this(16)

        override fun get(key: K): V? = map[key]

        override fun put(key: K, value: V) {
            val evicted = map.size >= capacity
            map[key] = value
        }

        val size: Int
            get() = map.size

        companion object {
            /** An empty cache of the default capacity. */
            fun <K, V> empty(): LruCache<K, V> = LruCache()
        }

        inner class Entry(val key: K)
    }

    data class Stats(val hits: Long, val misses: Long)

    enum class Policy { LRU, FIFO }

    object Caches {
        const val DEFAULT_CAPACITY = 16
    }

    @Deprecated("Use Cache")
    sealed interface Store

    /** Caches each value of the flow. */
    fun <T> Flow<T>.cached(cache: Cache<String, T>): Flow<T> = this

    suspend fun load(key: String): String {
        return key
    }
    """
)


def test_kotlin_definitions():
    path = "src/Cache.kt"
    chunks = definitions(path, KOTLIN)
    assert spans(chunks) == {
        f"{path} > Cache": (8, 11),
        f"{path} > Cache > get": (9, 9),
        f"{path} > Cache > put": (10, 10),
        f"{path} > Loader": (13, 13),
        f"{path} > LruCache": (16, 37),
        f"{path} > LruCache > map": (17, 17),
        f"{path} > LruCache > constructor": (19, 19),
        f"{path} > LruCache > get": (21, 21),
        f"{path} > LruCache > put": (23, 26),  # its local `val evicted` is no member
        f"{path} > LruCache > size": (28, 29),  # the getter on its own line belongs to it
        f"{path} > LruCache > Companion": (31, 34),
        f"{path} > LruCache > Companion > empty": (33, 33),
        f"{path} > LruCache > Entry": (36, 36),
        f"{path} > Stats": (39, 39),
        f"{path} > Policy": (41, 41),
        f"{path} > Caches": (43, 45),
        f"{path} > Caches > DEFAULT_CAPACITY": (44, 44),
        f"{path} > Store": (47, 48),
        f"{path} > Flow > cached": (51, 51),  # an extension function reads as its receiver's
        f"{path} > load": (53, 55),
    }
    d = defs(chunks)
    assert d[f"{path} > Cache"].signature == "interface Cache<K, V>"
    assert d[f"{path} > Cache"].docstring == "A key-value cache."
    assert d[f"{path} > Cache > get"].signature == "fun get(key: K): V?"
    assert d[f"{path} > Loader"].signature == "typealias Loader<K, V> = suspend (K) -> V"
    lru = d[f"{path} > LruCache"]
    assert lru.signature == "class LruCache<K, V>(private val capacity: Int) : Cache<K, V>"
    assert lru.docstring == "Evicts the least recently used entry."
    assert d[f"{path} > LruCache > get"].signature == "override fun get(key: K): V?"
    assert d[f"{path} > LruCache > put"].signature == "override fun put(key: K, value: V)"
    assert d[f"{path} > LruCache > size"].signature == "val size: Int"
    assert d[f"{path} > LruCache > Companion"].signature == "companion object"
    empty = d[f"{path} > LruCache > Companion > empty"]
    assert empty.signature == "fun <K, V> empty(): LruCache<K, V>"
    assert empty.docstring == "An empty cache of the default capacity."
    assert d[f"{path} > Stats"].signature == "data class Stats(val hits: Long, val misses: Long)"
    assert d[f"{path} > Policy"].signature == "enum class Policy"
    assert d[f"{path} > Caches"].signature == "object Caches"
    assert d[f"{path} > Caches > DEFAULT_CAPACITY"].signature == "const val DEFAULT_CAPACITY = 16"
    # An annotation on a line of its own does not hide the declaration.
    assert d[f"{path} > Store"].signature == '@Deprecated("Use Cache") sealed interface Store'
    cached = d[f"{path} > Flow > cached"]
    assert (cached.symbol, cached.docstring) == ("cached", "Caches each value of the flow.")
    assert cached.signature == "fun <T> Flow<T>.cached(cache: Cache<String, T>): Flow<T>"
    assert d[f"{path} > load"].signature == "suspend fun load(key: String): String"
    check_budget(path, KOTLIN)


# ---------------------------------------------------------------------------------- Scala

SCALA = src(
    """
    package cats.example

    import scala.annotation.tailrec

    /**
     * A semigroup: an associative combine.
     */
    trait Semigroup[A] {
      def combine(x: A, y: A): A

      // Combines n copies of a.
      def combineN(a: A, n: Int): A = {
        @tailrec def loop(acc: A, k: Int): A =
          if (k <= 1) acc else loop(combine(acc, a), k - 1)
        val start = a
        loop(start, n)
      }
    }

    object Semigroup {
      def apply[A](implicit ev: Semigroup[A]): Semigroup[A] = ev

      val intAddition: Semigroup[Int] = (x, y) => x + y

      implicit val stringConcat: Semigroup[String] = new Semigroup[String] {
        def combine(x: String, y: String): String = x + y
      }
    }

    final case class NonEmptyList[+A](head: A, tail: List[A]) {
      def map[B](f: A => B): NonEmptyList[B] = NonEmptyList(f(head), tail.map(f))
    }

    sealed abstract class Validated[+E, +A] extends Product with Serializable

    type Id[A] = A

    enum Color:
      case Red, Green

    given Semigroup[Int] with
      def combine(x: Int, y: Int): Int = x + y

    extension (s: String)
      def shout: String = s.toUpperCase
    """
)


def test_scala_definitions():
    path = "core/Semigroup.scala"
    chunks = definitions(path, SCALA)
    assert [(c.context, c.start_line, c.end_line) for c in chunks] == [
        (f"{path} > Semigroup", 8, 18),
        (f"{path} > Semigroup > combine", 9, 9),
        (f"{path} > Semigroup > combineN", 12, 17),
        (f"{path} > Semigroup > combineN > loop", 13, 14),  # a local def, not the local val
        (f"{path} > Semigroup", 20, 28),  # the companion object
        (f"{path} > Semigroup > apply", 21, 21),
        (f"{path} > Semigroup > intAddition", 23, 23),
        (f"{path} > Semigroup > stringConcat", 25, 27),
        (f"{path} > Semigroup > stringConcat > combine", 26, 26),
        (f"{path} > NonEmptyList", 30, 32),
        (f"{path} > NonEmptyList > map", 31, 31),
        (f"{path} > Validated", 34, 34),
        (f"{path} > Id", 36, 36),
        (f"{path} > Color", 38, 39),
        (f"{path} > Semigroup[Int]", 41, 42),  # an anonymous given is named by its type
        (f"{path} > Semigroup[Int] > combine", 42, 42),
        (f"{path} > String", 44, 45),  # an extension's methods live under the extended type
        (f"{path} > String > shout", 45, 45),
    ]
    d = defs(chunks)
    trait = next(c for c in chunks if c.docid == f"{path}:8-18")
    assert (trait.signature, trait.docstring) == ("trait Semigroup[A]", "A semigroup: an associative combine.")
    assert d[f"{path} > Semigroup > combine"].signature == "def combine(x: A, y: A): A"
    combine_n = d[f"{path} > Semigroup > combineN"]
    assert (combine_n.signature, combine_n.docstring) == ("def combineN(a: A, n: Int): A", "Combines n copies of a.")
    obj = next(c for c in chunks if c.docid == f"{path}:20-28")
    assert (obj.context, obj.signature) == (f"{path} > Semigroup", "object Semigroup")
    assert d[f"{path} > Semigroup > apply"].signature == "def apply[A](implicit ev: Semigroup[A]): Semigroup[A]"
    assert d[f"{path} > Semigroup > intAddition"].signature == "val intAddition: Semigroup[Int] = (x, y) => x + y"
    assert d[f"{path} > Semigroup > stringConcat"].signature == (
        "implicit val stringConcat: Semigroup[String] = new Semigroup[String]"
    )
    assert d[f"{path} > NonEmptyList"].signature == "final case class NonEmptyList[+A](head: A, tail: List[A])"
    assert d[f"{path} > Id"].signature == "type Id[A] = A"
    assert d[f"{path} > Color"].signature == "enum Color"
    assert d[f"{path} > Semigroup[Int]"].signature == "given Semigroup[Int] with"
    assert d[f"{path} > String"].signature == "extension (s: String)"
    assert d[f"{path} > String > shout"].signature == "def shout: String"
    check_budget(path, SCALA)


# ---------------------------------------------------------------------------------- Swift

SWIFT = src(
    """
    import Foundation

    /// A type that can respond to a request.
    public protocol Responder {
        /// The responder's name, for logs.
        var name: String { get }

        /// Responds to the request.
        func respond(to request: Request) -> Response
    }

    // A routing error.
    public enum RoutingError: Error {
        case notFound(path: String)
        case methodNotAllowed
    }

    public struct Route: CustomStringConvertible {
        public let method: String
        public var path: [String]

        public init(method: String, path: [String]) {
            self.method = method
            self.path = path
        }

        public var description: String {
            let joined = path.joined(separator: "/")
            return "\\(method) /\\(joined)"
        }
    }

    /// Keeps the routes.
    public final class Router {
        private var routes: [Route] = []

        deinit {
            routes.removeAll()
        }

        @discardableResult
        public func register(_ route: Route) -> Router {
            routes.append(route)
            return self
        }

        subscript(index: Int) -> Route {
            routes[index]
        }
    }

    extension Router: Responder {
        public var name: String { "router" }

        public func respond(to request: Request) -> Response {
            Response()
        }
    }

    extension Array where Element == Route {
        func matching(_ method: String) -> [Route] { filter { $0.method == method } }
    }

    typealias Handler = (Request) throws -> Response

    actor Counter {
        var value = 0
    }
    """
)


def test_swift_definitions():
    path = "Sources/Routing/Router.swift"
    chunks = definitions(path, SWIFT)
    assert [(c.context, c.start_line, c.end_line) for c in chunks] == [
        (f"{path} > Responder", 4, 10),
        (f"{path} > Responder > name", 6, 6),
        (f"{path} > Responder > respond", 9, 9),
        (f"{path} > RoutingError", 13, 16),
        (f"{path} > Route", 18, 31),
        (f"{path} > Route > method", 19, 19),
        (f"{path} > Route > path", 20, 20),
        (f"{path} > Route > init", 22, 25),
        (f"{path} > Route > description", 27, 30),  # its local `let joined` is no member
        (f"{path} > Router", 34, 50),
        (f"{path} > Router > routes", 35, 35),
        (f"{path} > Router > deinit", 37, 39),
        (f"{path} > Router > register", 41, 45),
        (f"{path} > Router > subscript", 47, 49),
        (f"{path} > Router", 52, 58),  # the extension, named by the type it extends
        (f"{path} > Router > name", 53, 53),
        (f"{path} > Router > respond", 55, 57),
        (f"{path} > Array", 60, 62),
        (f"{path} > Array > matching", 61, 61),
        (f"{path} > Handler", 64, 64),
        (f"{path} > Counter", 66, 68),
        (f"{path} > Counter > value", 67, 67),
    ]
    d = defs(chunks)
    responder = d[f"{path} > Responder"]
    assert responder.signature == "public protocol Responder"
    assert responder.docstring == "A type that can respond to a request."
    assert d[f"{path} > Responder > name"].signature == "var name: String"
    assert d[f"{path} > Responder > name"].docstring == "The responder's name, for logs."
    respond = d[f"{path} > Responder > respond"]
    assert respond.signature == "func respond(to request: Request) -> Response"
    assert respond.docstring == "Responds to the request."
    error = d[f"{path} > RoutingError"]
    assert (error.signature, error.docstring) == ("public enum RoutingError: Error", "A routing error.")
    assert d[f"{path} > Route"].signature == "public struct Route: CustomStringConvertible"
    assert d[f"{path} > Route > init"].signature == "public init(method: String, path: [String])"
    assert d[f"{path} > Route > description"].signature == "public var description: String"
    router = next(c for c in chunks if c.docid == f"{path}:34-50")
    assert (router.signature, router.docstring) == ("public final class Router", "Keeps the routes.")
    register = d[f"{path} > Router > register"]
    assert register.signature == "@discardableResult public func register(_ route: Route) -> Router"
    assert d[f"{path} > Router > subscript"].signature == "subscript(index: Int) -> Route"
    extension = next(c for c in chunks if c.docid == f"{path}:52-58")
    assert (extension.symbol, extension.signature) == ("Router", "extension Router: Responder")
    assert d[f"{path} > Array"].signature == "extension Array where Element == Route"
    assert d[f"{path} > Handler"].signature == "typealias Handler = (Request) throws -> Response"
    assert d[f"{path} > Counter"].signature == "actor Counter"
    check_budget(path, SWIFT)


# ------------------------------------------------------------------------------------ PHP

PHP = src(
    """
    <?php

    namespace Illuminate\\Support;

    use Countable;

    /**
     * Marks a class that can be turned into an array.
     */
    interface Arrayable
    {
        public function toArray(): array;
    }

    trait Macroable
    {
        protected static array $macros = [];

        // Registers a custom macro.
        public static function macro(string $name, callable $macro): void
        {
            static::$macros[$name] = $macro;
        }
    }

    enum Status: string
    {
        case Active = 'active';

        public function label(): string
        {
            return ucfirst($this->value);
        }
    }

    /**
     * A collection of items.
     */
    #[\\AllowDynamicProperties]
    final class Collection implements Arrayable, Countable
    {
        use Macroable;

        public function __construct(protected array $items = [])
        {
        }

        /**
         * Runs a filter over each item.
         *
         * @param  callable|null  $callback
         * @return static
         */
        public function filter(?callable $callback = null): static
        {
            return new static(array_filter($this->items, $callback));
        }

        # The number of items.
        public function count(): int
        {
            return count($this->items);
        }
    }

    function collect($value = []): Collection
    {
        return new Collection($value);
    }
    """
)


def test_php_definitions():
    path = "src/Support/Collection.php"
    chunks = definitions(path, PHP)
    ns = f"{path} > Illuminate\\Support"
    assert spans(chunks) == {
        f"{ns} > Arrayable": (10, 13),
        f"{ns} > Arrayable > toArray": (12, 12),
        f"{ns} > Macroable": (15, 24),
        f"{ns} > Macroable > macro": (20, 23),
        f"{ns} > Status": (26, 34),
        f"{ns} > Status > label": (30, 33),
        f"{ns} > Collection": (39, 64),
        f"{ns} > Collection > __construct": (44, 46),
        f"{ns} > Collection > filter": (54, 57),
        f"{ns} > Collection > count": (60, 63),
        f"{ns} > collect": (66, 69),
    }
    d = defs(chunks)
    arrayable = d[f"{ns} > Arrayable"]
    assert (arrayable.signature, arrayable.docstring) == (
        "interface Arrayable",
        "Marks a class that can be turned into an array.",
    )
    assert d[f"{ns} > Arrayable > toArray"].signature == "public function toArray(): array"
    assert d[f"{ns} > Macroable"].signature == "trait Macroable"
    macro = d[f"{ns} > Macroable > macro"]
    assert macro.signature == "public static function macro(string $name, callable $macro): void"
    assert macro.docstring == "Registers a custom macro."
    assert d[f"{ns} > Status"].signature == "enum Status: string"
    collection = d[f"{ns} > Collection"]
    assert collection.signature == "#[\\AllowDynamicProperties] final class Collection implements Arrayable, Countable"
    assert collection.docstring == "A collection of items."
    f = d[f"{ns} > Collection > filter"]
    assert f.signature == "public function filter(?callable $callback = null): static"
    assert f.docstring == "Runs a filter over each item.\n\n@param  callable|null  $callback\n@return static"
    assert d[f"{ns} > Collection > count"].docstring == "The number of items."
    assert d[f"{ns} > collect"].signature == "function collect($value = []): Collection"
    check_budget(path, PHP)


# -------------------------------------------------------------------------------- Haskell

HASKELL = src(
    """
    {-# LANGUAGE OverloadedStrings #-}
    -- | Rendering documents to text.
    module Text.Sample.Render
      ( Doc (..)
      , render
      , Renderable (..)
      ) where

    import qualified Data.Text as T

    -- | A document: a title and blocks.
    data Doc = Doc
      { docTitle  :: T.Text
      , docBlocks :: [Block]
      } deriving (Show, Eq)

    newtype Width = Width Int

    type Blocks = [Block]

    data Block
      = Para T.Text
      | Header Int T.Text
      deriving (Show, Eq)

    {- | Things that render to text. -}
    class Renderable a where
      renderIt :: a -> T.Text
      renderAll :: [a] -> T.Text
      renderAll = T.concat . map renderIt

    instance Renderable Block where
      renderIt (Para t) = t
      renderIt (Header n t) = T.replicate n "#" <> " " <> t

    -- | Render a document at a width.
    render :: Width   -- ^ the line width
           -> Doc
           -> T.Text
    render (Width w) doc
      | w <= 0 = T.empty
      | otherwise = T.unlines (map renderIt (docBlocks doc))

    -- Counts the headers.
    countHeaders :: [Block] -> Int
    countHeaders [] = 0
    countHeaders (Header _ _ : bs) = 1 + countHeaders bs
    countHeaders (_ : bs) = go bs
      where
        go = countHeaders

    {-# INLINE trim #-}
    trim :: T.Text -> T.Text
    trim = T.strip

    (<+>) :: Doc -> Doc -> Doc
    a <+> b = a { docBlocks = docBlocks a ++ docBlocks b }
    """
)


def test_haskell_definitions():
    path = "src/Text/Sample/Render.hs"
    chunks = definitions(path, HASKELL)
    assert spans(chunks) == {
        f"{path} > Doc": (12, 15),
        f"{path} > Width": (17, 17),
        f"{path} > Blocks": (19, 19),
        f"{path} > Block": (21, 24),
        f"{path} > Renderable": (27, 30),
        f"{path} > Renderable > renderIt": (28, 28),
        f"{path} > Renderable > renderAll": (29, 30),  # a class method's default joins its type
        f"{path} > Renderable Block": (32, 34),
        f"{path} > Renderable Block > renderIt": (33, 34),
        # The type signature and every equation are one definition; `where` helpers stay inside.
        f"{path} > render": (37, 42),
        f"{path} > countHeaders": (45, 50),
        f"{path} > trim": (53, 54),
        f"{path} > <+>": (56, 57),
    }
    d = defs(chunks)
    doc = d[f"{path} > Doc"]
    assert (doc.signature, doc.docstring) == ("data Doc = Doc", "A document: a title and blocks.")
    assert d[f"{path} > Width"].signature == "newtype Width = Width Int"
    assert d[f"{path} > Blocks"].signature == "type Blocks = [Block]"
    assert d[f"{path} > Block"].signature == "data Block"
    renderable = d[f"{path} > Renderable"]
    assert (renderable.signature, renderable.docstring) == ("class Renderable a", "Things that render to text.")
    assert d[f"{path} > Renderable > renderAll"].signature == "renderAll :: [a] -> T.Text"
    assert d[f"{path} > Renderable Block"].signature == "instance Renderable Block"
    assert d[f"{path} > Renderable Block > renderIt"].signature == "renderIt (Para t)"
    render = d[f"{path} > render"]
    assert render.signature == "render :: Width -> Doc -> T.Text"  # without its `-- ^` comment
    assert render.docstring == "Render a document at a width."
    count = d[f"{path} > countHeaders"]
    assert (count.signature, count.docstring) == ("countHeaders :: [Block] -> Int", "Counts the headers.")
    assert d[f"{path} > trim"].signature == "trim :: T.Text -> T.Text"
    assert d[f"{path} > <+>"].symbol == "<+>"
    check_budget(path, HASKELL)
    # The INLINE pragma belongs to its function's chunk.
    (trim,) = [c for c in chunk_file(path, HASKELL, window=4, overlap=1) if "trim" in c.symbol.split()]
    assert (trim.start_line, trim.end_line) == (52, 54)


# --------------------------------------------------------------------------------- Elixir

ELIXIR = src(
    '''
    defmodule Phoenix.Router do
      @moduledoc """
      Defines a router.

      Routes requests to controllers.
      """

      alias Phoenix.Router.Route

      @doc false
      defmacro __using__(opts) do
        quote do
          import Phoenix.Router
          @opts unquote(opts)
        end
      end

      @doc ~S"""
      Generates a route match based on an arbitrary HTTP method.
      """
      @spec match(atom, String.t(), module) :: Macro.t()
      defmacro match(verb, path, plug, plug_opts \\\\ []) do
        add_route(:match, verb, path, plug, plug_opts)
      end

      @doc "Defines a scope."
      def scope(path, options \\\\ [], do: context) when is_binary(path) do
        {path, options, context}
      end

      # Splits a path into segments.
      def split(nil), do: []

      def split(path) do
        String.split(path, "/", trim: true)
      end

      defp add_route(kind, verb, path, plug, plug_opts) do
        Route.build(kind, verb, path, plug, plug_opts)
      end

      defdelegate url(conn), to: Phoenix.VerifiedRoutes

      defmodule Route do
        @moduledoc false
        defstruct [:verb, :path, :plug]

        def build(kind, verb, path, plug, opts) do
          %Route{verb: verb, path: path, plug: plug}
        end
      end
    end
    '''
)

ELIXIR_PROTOCOL = src(
    """
    defprotocol Phoenix.Param do
      @doc "Converts a term to a URL param."
      def to_param(term)
    end

    defimpl Phoenix.Param, for: Integer do
      def to_param(int), do: Integer.to_string(int)
    end
    """
)


def test_elixir_definitions():
    path = "lib/phoenix/router.ex"
    chunks = definitions(path, ELIXIR)
    router = f"{path} > Phoenix > Router"
    assert spans(chunks) == {
        router: (1, 52),
        f"{router} > __using__": (10, 16),  # @doc and @spec just above belong to the span
        f"{router} > match": (18, 24),
        f"{router} > scope": (26, 29),
        f"{router} > split": (32, 36),  # both clauses: one definition
        f"{router} > add_route": (38, 40),
        f"{router} > url": (42, 42),
        f"{router} > Route": (44, 51),
        f"{router} > Route > defstruct": (46, 46),
        f"{router} > Route > build": (48, 50),
    }
    d = defs(chunks)
    module = d[router]
    # The module's own name is its symbol; the whole dotted name is in its signature.
    assert (module.symbol, module.signature) == ("Router", "defmodule Phoenix.Router")
    assert module.docstring == "Defines a router.\n\nRoutes requests to controllers."
    assert d[f"{router} > __using__"].docstring == ""  # @doc false
    match = d[f"{router} > match"]
    assert match.signature == "defmacro match(verb, path, plug, plug_opts \\\\ [])"
    assert match.docstring == "Generates a route match based on an arbitrary HTTP method."
    scope = d[f"{router} > scope"]
    assert scope.signature == "def scope(path, options \\\\ [], do: context) when is_binary(path)"
    assert scope.docstring == "Defines a scope."
    split = d[f"{router} > split"]
    assert (split.signature, split.docstring) == ("def split(nil)", "Splits a path into segments.")
    assert d[f"{router} > add_route"].signature == "defp add_route(kind, verb, path, plug, plug_opts)"
    assert d[f"{router} > url"].signature == "defdelegate url(conn)"
    assert d[f"{router} > Route"].signature == "defmodule Route"
    check_budget(path, ELIXIR)
    param = "lib/phoenix/param.ex"
    chunks = definitions(param, ELIXIR_PROTOCOL)
    assert spans(chunks) == {
        f"{param} > Phoenix > Param": (1, 4),
        f"{param} > Phoenix > Param > to_param": (2, 3),
        f"{param} > Phoenix > Param > Integer": (6, 8),  # the module Elixir makes of the impl
        f"{param} > Phoenix > Param > Integer > to_param": (7, 7),
    }
    d = defs(chunks)
    assert d[f"{param} > Phoenix > Param"].signature == "defprotocol Phoenix.Param"
    assert d[f"{param} > Phoenix > Param > to_param"].docstring == "Converts a term to a URL param."
    assert d[f"{param} > Phoenix > Param > Integer"].signature == "defimpl Phoenix.Param, for: Integer"
    assert d[f"{param} > Phoenix > Param > Integer > to_param"].signature == "def to_param(int)"


def test_elixir_test_blocks_are_named_by_their_description():
    code = src(
        """
        defmodule Phoenix.RouterTest do
          use ExUnit.Case, async: true

          describe "scope/2" do
            test "nests paths" do
              assert Router.scope("/a") == "/a"
            end
          end
        end
        """
    )
    assert spans(definitions("test/router_test.exs", code)) == {
        "test/router_test.exs > Phoenix > RouterTest": (1, 9),
        "test/router_test.exs > Phoenix > RouterTest > scope/2": (4, 8),
        "test/router_test.exs > Phoenix > RouterTest > scope/2 > nests paths": (5, 7),
    }


# ------------------------------------------------------------------------------------ Lua

LUA = src(
    """
    --- Utilities for pickers.
    -- @module telescope.utils
    local utils = {}

    local Path = require("plenary.path")

    --- Returns the path relative to the cwd.
    ---@param path string
    ---@return string
    function utils.relative(path)
      return Path:new(path):make_relative()
    end

    -- Splits a string on a separator.
    utils.split = function(s, sep)
      local out = {}
      for part in string.gmatch(s, "[^" .. sep .. "]+") do
        table.insert(out, part)
      end
      return out
    end

    local function trim(s)
      return (s:gsub("^%s+", ""):gsub("%s+$", ""))
    end

    local Picker = {}
    Picker.__index = Picker

    --[[
      Creates a picker.
    ]]
    function Picker:new(opts)
      local obj = setmetatable({}, self)
      obj.prompt = opts.prompt or "> "
      return obj
    end

    function Picker:find()
      return self.prompt
    end

    local default_opts = {
      sorting_strategy = "descending",
      on_select = function(entry)
        return entry
      end,
    }

    local format = function(entry) return tostring(entry) end

    utils.Picker = Picker
    return utils
    """
)


def test_lua_definitions():
    path = "lua/telescope/utils.lua"
    chunks = definitions(path, LUA)
    assert spans(chunks) == {
        f"{path} > utils > relative": (10, 12),  # the table path is the breadcrumb
        f"{path} > utils > split": (15, 21),
        f"{path} > trim": (23, 25),
        f"{path} > Picker > new": (33, 37),
        f"{path} > Picker > find": (39, 41),
        f"{path} > on_select": (45, 47),
        f"{path} > format": (50, 50),
    }
    d = defs(chunks)
    relative = d[f"{path} > utils > relative"]
    assert (relative.symbol, relative.signature) == ("relative", "function utils.relative(path)")
    assert relative.docstring == "Returns the path relative to the cwd.\n@param path string\n@return string"
    split = d[f"{path} > utils > split"]
    assert (split.signature, split.docstring) == ("utils.split = function(s, sep)", "Splits a string on a separator.")
    assert d[f"{path} > trim"].signature == "local function trim(s)"
    new = d[f"{path} > Picker > new"]
    assert (new.symbol, new.signature, new.docstring) == ("new", "function Picker:new(opts)", "Creates a picker.")
    assert d[f"{path} > on_select"].signature == "on_select = function(entry)"
    assert d[f"{path} > format"].signature == "local format = function(entry)"
    check_budget(path, LUA)


# ------------------------------------------------------------------------------------ Zig

ZIG = src(
    """
    //! A small growable buffer.
    const std = @import("std");
    const Allocator = std.mem.Allocator;

    /// Errors the buffer can return.
    pub const Error = error{ OutOfMemory, Overflow };

    /// A growable byte buffer.
    pub const Buffer = struct {
        items: []u8,
        allocator: Allocator,

        const Self = @This();

        /// Creates an empty buffer.
        pub fn init(allocator: Allocator) Self {
            return .{ .items = &[_]u8{}, .allocator = allocator };
        }

        // Frees the memory.
        pub fn deinit(self: *Self) void {
            self.allocator.free(self.items);
        }

        pub fn append(self: *Self, byte: u8) Error!void {
            _ = byte;
            _ = self;
        }
    };

    pub const Kind = enum(u8) {
        text,
        binary,

        pub fn isText(self: Kind) bool {
            return self == .text;
        }
    };

    const Value = union(enum) {
        int: i64,
        float: f64,
    };

    fn helper(x: u32) u32 {
        return x * 2;
    }

    pub fn Pair(comptime T: type) type {
        return struct { a: T, b: T };
    }

    test "buffer starts empty" {
        var buf = Buffer.init(std.testing.allocator);
        defer buf.deinit();
        try std.testing.expectEqual(@as(usize, 0), buf.items.len);
    }
    """
)


def test_zig_definitions():
    path = "src/buffer.zig"
    chunks = definitions(path, ZIG)
    assert spans(chunks) == {
        f"{path} > Error": (6, 6),
        f"{path} > Buffer": (9, 29),
        f"{path} > Buffer > init": (16, 18),
        f"{path} > Buffer > deinit": (21, 23),
        f"{path} > Buffer > append": (25, 28),
        f"{path} > Kind": (31, 38),
        f"{path} > Kind > isText": (35, 37),
        f"{path} > Value": (40, 43),
        f"{path} > helper": (45, 47),
        f"{path} > Pair": (49, 51),
        f"{path} > buffer starts empty": (53, 57),
    }
    d = defs(chunks)
    assert d[f"{path} > Error"].signature == "pub const Error = error{OutOfMemory, Overflow}"
    assert d[f"{path} > Error"].docstring == "Errors the buffer can return."
    buffer = d[f"{path} > Buffer"]
    assert (buffer.signature, buffer.docstring) == ("pub const Buffer = struct", "A growable byte buffer.")
    init = d[f"{path} > Buffer > init"]
    assert (init.signature, init.docstring) == ("pub fn init(allocator: Allocator) Self", "Creates an empty buffer.")
    assert d[f"{path} > Buffer > deinit"].docstring == "Frees the memory."
    assert d[f"{path} > Buffer > append"].signature == "pub fn append(self: *Self, byte: u8) Error!void"
    assert d[f"{path} > Kind"].signature == "pub const Kind = enum(u8)"
    assert d[f"{path} > Value"].signature == "const Value = union(enum)"
    assert d[f"{path} > helper"].signature == "fn helper(x: u32) u32"
    assert d[f"{path} > Pair"].signature == "pub fn Pair(comptime T: type) type"
    assert d[f"{path} > buffer starts empty"].signature == 'test "buffer starts empty"'
    check_budget(path, ZIG)


# ----------------------------------------------------------------------------------- Bash

BASH = src(
    """
    #!/usr/bin/env bash
    # Helpers for the test runner.

    set -euo pipefail

    BATS_VERSION="1.11.0"

    # Prints a message to stderr.
    # Arguments: the message.
    log() {
      printf '%s\\n' "$*" >&2
    }

    function die {
      log "error: $*"
      exit 1
    }

    # Runs one test file in a subshell.
    run_file() (
      local file="$1"
      if [[ ! -f "$file" ]]; then
        die "no such file: $file"
      fi
      bash "$file"
    )

    bats_trim() {
      local -r input="$1"
      echo "${input#"${input%%[![:space:]]*}"}"
    }

    main() {
      for f in "$@"; do
        run_file "$f"
      done
    }

    main "$@"
    """
)


def test_bash_definitions():
    path = "bin/bats-run.sh"
    chunks = definitions(path, BASH)
    assert spans(chunks) == {
        f"{path} > log": (10, 12),
        f"{path} > die": (14, 17),
        f"{path} > run_file": (20, 26),
        f"{path} > bats_trim": (28, 31),
        f"{path} > main": (33, 37),
    }
    d = defs(chunks)
    log = d[f"{path} > log"]
    assert (log.signature, log.docstring) == ("log()", "Prints a message to stderr.\nArguments: the message.")
    assert d[f"{path} > die"].signature == "function die"
    assert d[f"{path} > run_file"].docstring == "Runs one test file in a subshell."
    assert all(c.language == "shell" for c in chunks)
    check_budget(path, BASH)


# --------------------------------------------------------------------------- symbols arm

SAMPLES = {
    "src/Circle.cs": CSHARP,
    "src/Cache.kt": KOTLIN,
    "core/Semigroup.scala": SCALA,
    "Sources/Routing/Router.swift": SWIFT,
    "src/Support/Collection.php": PHP,
    "src/Text/Sample/Render.hs": HASKELL,
    "lib/phoenix/router.ex": ELIXIR,
    "lib/phoenix/param.ex": ELIXIR_PROTOCOL,
    "lua/telescope/utils.lua": LUA,
    "src/buffer.zig": ZIG,
    "bin/bats-run.sh": BASH,
}


@pytest.mark.parametrize("path", SAMPLES)
def test_the_new_languages_give_the_symbols_arm_its_documents(path):
    chunks = chunk_file(path, SAMPLES[path])
    documents = [c for c in chunks if symbols_arm.include(c)]
    assert documents and all(c.symbol for c in documents)


def test_a_bare_identifier_finds_its_definition_through_the_symbols_arm(tmp_path):
    from ranklens.core.engine import Engine

    for rel, text in SAMPLES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    engine = Engine(tmp_path)
    try:
        engine.ensure_index()

        def top(query, language=None):
            (hit, *_) = engine.run_arm("symbols", query, depth=3, language=language).hits
            return hit.path

        # `defmodule Phoenix.Router` by its last segment and by its whole name (the Swift
        # sample has a Router class of its own).
        assert top("Router", "elixir") == "lib/phoenix/router.ex"
        assert top("Phoenix.Router") == "lib/phoenix/router.ex"
        assert top("Param") == "lib/phoenix/param.ex"
        for query, path in [
            ("IShape", "src/Circle.cs"),
            ("LruCache", "src/Cache.kt"),
            ("NonEmptyList", "core/Semigroup.scala"),
            ("RoutingError", "Sources/Routing/Router.swift"),
            ("Macroable", "src/Support/Collection.php"),
            ("countHeaders", "src/Text/Sample/Render.hs"),
            ("relative", "lua/telescope/utils.lua"),
            ("Buffer", "src/buffer.zig"),
            ("bats_trim", "bin/bats-run.sh"),
        ]:
            assert top(query) == path, query
    finally:
        engine.close()
