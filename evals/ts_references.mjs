// The TypeScript compiler's language service as a reference tool for evals/graph_reference.py.
//
//   node evals/ts_references.mjs ROOT FILES.json  < requests.jsonl  > answers.jsonl
//
// ROOT: the project folder; FILES.json: the files (relative to ROOT, POSIX) the program holds,
// the ones ranklens indexed (TypeScript and JavaScript; allowJs). Compiler options come from the
// nearest tsconfig.json at or above ROOT (its file list is not used; an `extends` that does not
// resolve leaves the options it could read), or are ES modules resolved as a bundler does. The typescript package is found by the usual
// module resolution, or in TYPESCRIPT_DIR (a folder holding node_modules/typescript).
//
// One JSON request a line, one JSON answer a line, in order:
//   {"op": "refs", "file": F, "line": L, "column": C}   line 1-based, column 0-based
//     -> {"refs": [{"file", "line", "definition"}]}   every reference to the symbol there, in
//        the program's files (findReferences, less the uses of siblings: see `elsewhere`;
//        `definition`: a declaration's own name, see `declares`), and `kind`, the symbol's
//        declaration's (`MethodDeclaration`, `ClassDeclaration` …; `object member` for an object
//        literal's); {"refs": null} when no symbol is there
//   {"op": "goto", "file": F, "line": L, "column": C}
//     -> {"definitions": [{"file", "line"}]}   where the name there is defined
//        (getDefinitionAtPosition; a file outside ROOT, the standard library's or a package's,
//        comes back absolute)

import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
function loadTs() {
  const dirs = [process.env.TYPESCRIPT_DIR, process.cwd()].filter(Boolean);
  for (const dir of dirs) {
    try {
      return require(require.resolve("typescript", { paths: [dir] }));
    } catch {}
  }
  return require("typescript");
}
const ts = loadTs();

const [root, listFile] = process.argv.slice(2);
if (!root || !listFile) {
  process.stderr.write("usage: node ts_references.mjs ROOT FILES.json\n");
  process.exit(2);
}
const absRoot = path.resolve(root);
const files = JSON.parse(fs.readFileSync(listFile, "utf8")).map((f) => path.join(absRoot, f));

function compilerOptions() {
  const found = ts.findConfigFile(absRoot, ts.sys.fileExists, "tsconfig.json");
  // Without a tsconfig.json (the benchmark keeps `src` alone): ES modules as a bundler resolves
  // them (`./retry.js` is `./retry.ts`, a folder is its index).
  let options = {
    target: ts.ScriptTarget.ESNext,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    jsx: ts.JsxEmit.Preserve,
    esModuleInterop: true,
  };
  if (found) {
    const read = ts.readConfigFile(found, ts.sys.readFile);
    if (read.config) {
      const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, path.dirname(found));
      options = parsed.options;
    }
  }
  return {
    ...options,
    allowJs: true,
    checkJs: false,
    noEmit: true,
    skipLibCheck: true,
    // Declarations the build writes (outDir) would shadow the sources.
    outDir: undefined,
    declarationDir: undefined,
    composite: false,
  };
}

const options = compilerOptions();
const versions = new Map(files.map((f) => [f, "1"]));
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: (f) => versions.get(f) ?? "1",
  getScriptSnapshot: (f) => {
    if (!fs.existsSync(f)) return undefined;
    return ts.ScriptSnapshot.fromString(fs.readFileSync(f, "utf8"));
  },
  getCurrentDirectory: () => absRoot,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: ts.sys.fileExists,
  readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());

function position(file, line, column) {
  const source = service.getProgram().getSourceFile(file);
  if (!source) return null;
  const lines = source.getLineStarts();
  if (line < 1 || line > lines.length) return null;
  return { source, pos: lines[line - 1] + column };
}

function nodeAt(source, start) {
  let node = source;
  for (;;) {
    const child = node.forEachChild((c) => (c.getStart(source) <= start && start < c.getEnd() ? c : undefined));
    if (!child) return node;
    node = child;
  }
}

// Whether the name at `start` of `fileName` is a declaration's own name (a method that
// overrides or implements the one asked about, an overload, an interface's member merged
// with the class, an object literal's method given the same contextual type, an import's
// binding): the language service lists those among references; jedi's `is_definition()`.
// A shorthand property (`{ retry }`) is a use of the variable, not a declaration.
function declares(fileName, start) {
  const source = service.getProgram().getSourceFile(fileName);
  const parent = source && nodeAt(source, start).parent;
  return Boolean(parent && DECLARATIONS.some((is) => is(parent)) && parent.name === nodeAt(source, start));
}

// The declarations a use may reach for the symbol at `pos`: its own, and those of the members
// it overrides or implements (a call through the base class, the interface or an object
// literal's contextual type may land on it).
function reachable(file, pos) {
  const program = service.getProgram();
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  let symbol = source && checker.getSymbolAtLocation(nodeAt(source, pos));
  if (!symbol) return [];
  if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const out = new Set();
  const queue = [...(symbol.declarations || [])];
  while (queue.length) {
    const decl = queue.pop();
    if (out.has(decl)) continue;
    out.add(decl);
    queue.push(...overridden(checker, decl));
  }
  return [...out];
}

function overridden(checker, decl) {
  const owner = decl.parent;
  if (!owner || !decl.name || !ts.isIdentifier(decl.name)) return [];
  if (ts.isObjectLiteralExpression(owner)) {
    // An object literal's method implements its contextual type's (`{ check(v) { … } }`
    // passed where `SchemaOptions` is expected).
    const type = checker.getContextualType(owner);
    const member = type && checker.getPropertyOfType(type, decl.name.text);
    return member ? [...(member.declarations || [])] : [];
  }
  if (!(ts.isClassLike(owner) || ts.isInterfaceDeclaration(owner))) return [];
  const out = [];
  for (const clause of owner.heritageClauses || []) {
    for (const t of clause.types) {
      const type = checker.getTypeAtLocation(t);
      const member = type && checker.getPropertyOfType(type, decl.name.text);
      if (member) out.push(...(member.declarations || []));
    }
  }
  return out;
}

// Whether the use at `start` of `fileName` means another symbol than the `reachable`
// declarations: findReferences also lists the uses of a sibling that implements the same
// interface member (`Schema.cast` for `Lazy.cast`, both `ISchema.cast`), which no call of the
// one asked about reaches. A use whose definition is not found is kept.
function elsewhere(fileName, start, decls) {
  const found = service.getDefinitionAtPosition(fileName, start) || [];
  if (!found.length) return false;
  return !found.some((g) =>
    decls.some((d) => {
      const f = d.getSourceFile();
      return f.fileName === g.fileName && d.getStart(f) <= g.textSpan.start && g.textSpan.start < d.getEnd();
    }),
  );
}

const DECLARATIONS = [
  ts.isFunctionDeclaration,
  ts.isMethodDeclaration,
  ts.isMethodSignature,
  ts.isPropertyDeclaration,
  ts.isPropertySignature,
  ts.isPropertyAssignment,
  ts.isGetAccessorDeclaration,
  ts.isSetAccessorDeclaration,
  ts.isClassDeclaration,
  ts.isClassExpression,
  ts.isInterfaceDeclaration,
  ts.isTypeAliasDeclaration,
  ts.isEnumDeclaration,
  ts.isEnumMember,
  ts.isModuleDeclaration,
  ts.isVariableDeclaration,
  ts.isFunctionExpression,
  ts.isImportSpecifier,
  ts.isImportClause,
  ts.isNamespaceImport,
  ts.isImportEqualsDeclaration,
  ts.isExportSpecifier,
];

function place(fileName, start) {
  const source = service.getProgram().getSourceFile(fileName);
  const line = source ? source.getLineAndCharacterOfPosition(start).line + 1 : 0;
  const rel = path.relative(absRoot, fileName);
  const inside = !rel.startsWith("..") && !path.isAbsolute(rel);
  return { file: inside ? rel.split(path.sep).join("/") : fileName, line, inside };
}

function answer(req) {
  const file = path.join(absRoot, req.file);
  const at = position(file, req.line, req.column);
  if (req.op === "refs") {
    if (!at) return { refs: null };
    const found = service.findReferences(file, at.pos);
    if (!found) return { refs: null };
    const decls = reachable(file, at.pos);
    const own = decls[0];
    const kind = !own ? "" : ts.isObjectLiteralExpression(own.parent) ? "object member" : ts.SyntaxKind[own.kind];
    const out = [];
    for (const group of found) {
      for (const r of group.references) {
        const p = place(r.fileName, r.textSpan.start);
        if (!p.inside) continue;
        const definition = Boolean(r.isDefinition) || declares(r.fileName, r.textSpan.start);
        if (!definition && elsewhere(r.fileName, r.textSpan.start, decls)) continue;
        out.push({ file: p.file, line: p.line, definition });
      }
    }
    return { refs: out, kind };
  }
  if (req.op === "goto") {
    if (!at) return { definitions: [] };
    const found = service.getDefinitionAtPosition(file, at.pos) || [];
    return { definitions: found.map((d) => place(d.fileName, d.textSpan.start)).map(({ file, line }) => ({ file, line })) };
  }
  return { error: `unknown op ${req.op}` };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const text of lines) {
  if (!text.trim()) continue;
  let out;
  try {
    out = answer(JSON.parse(text));
  } catch (err) {
    out = { error: String(err && err.message ? err.message : err) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
