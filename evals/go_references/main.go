// Command go_references: Go's type checker (go/types, the standard library) as a reference tool
// for evals/graph_reference.py.
//
//	go run ./evals/go_references ROOT FILES.json  < requests.jsonl  > answers.jsonl
//
// ROOT: the module's folder (its go.mod names the module path); FILES.json: the files (relative
// to ROOT, POSIX) the program holds, the ones ranklens indexed. Each folder's package is checked
// with its in-package tests, its external test package (`package x_test`) apart; a package of
// the module is imported from its files, the standard library from the toolchain's export data,
// and any other module as an empty package (its names stay unresolved; errors are ignored).
// Objects are told apart by where they are declared, so a package checked twice (imported, and
// with its tests) is one package.
//
// One JSON request a line, one JSON answer a line, in order:
//
//	{"op": "refs", "file": F, "line": L, "column": C}   line 1-based, column 0-based (bytes)
//	  -> {"refs": [{"file", "line", "definition"}], "kind"}   every use of the object declared or
//	     used there (types.Info.Uses; a method's through an interface is not one), its
//	     declaration marked `definition`; `kind`: func, method, type, var, const, field;
//	     {"refs": null} when no object is there
//	{"op": "goto", "file": F, "line": L, "column": C}
//	  -> {"definitions": [{"file", "line", "outside"}]}   where the object there is declared
//	     (`outside`: not under ROOT, the standard library's; none for another module's)
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

type unit struct {
	files []*ast.File
	names []string // relative paths, as files
}

type world struct {
	root, module string
	fset         *token.FileSet
	dirs         map[string]map[string]*unit // folder -> package name -> files
	imported     map[string]*types.Package
	std          types.Importer
	infos        []*types.Info
	byFile       map[string][]*types.Info
	parsed       map[string]*ast.File
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go_references ROOT FILES.json")
		os.Exit(2)
	}
	w := load(os.Args[1], os.Args[2])
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var req struct {
			Op     string `json:"op"`
			File   string `json:"file"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		}
		var answer interface{}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			answer = map[string]string{"error": err.Error()}
		} else if req.Op == "refs" {
			answer = w.refs(req.File, req.Line, req.Column)
		} else if req.Op == "goto" {
			answer = w.gotoDef(req.File, req.Line, req.Column)
		} else {
			answer = map[string]string{"error": "unknown op " + req.Op}
		}
		data, _ := json.Marshal(answer)
		out.Write(data)
		out.WriteByte('\n')
		out.Flush()
	}
}

func load(root, list string) *world {
	abs, _ := filepath.Abs(root)
	w := &world{
		root: abs, fset: token.NewFileSet(), dirs: map[string]map[string]*unit{},
		imported: map[string]*types.Package{}, byFile: map[string][]*types.Info{},
		parsed: map[string]*ast.File{},
	}
	// Export data read into the same file set: a standard library object's position is its file's.
	w.std = importer.ForCompiler(w.fset, "gc", nil)
	if mod, err := os.ReadFile(filepath.Join(abs, "go.mod")); err == nil {
		for _, l := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
				w.module = strings.Trim(f[1], `"`)
			}
		}
	}
	var files []string
	data, err := os.ReadFile(list)
	if err == nil {
		err = json.Unmarshal(data, &files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot read", list, err)
		os.Exit(2)
	}
	sort.Strings(files)
	for _, rel := range files {
		if !strings.HasSuffix(rel, ".go") {
			continue
		}
		f, err := parser.ParseFile(w.fset, filepath.Join(abs, rel), nil, parser.ParseComments)
		if f == nil {
			fmt.Fprintln(os.Stderr, "skipped", rel, err)
			continue
		}
		w.parsed[rel] = f
		dir := path.Dir(rel)
		if w.dirs[dir] == nil {
			w.dirs[dir] = map[string]*unit{}
		}
		name := f.Name.Name
		u := w.dirs[dir][name]
		if u == nil {
			u = &unit{}
			w.dirs[dir][name] = u
		}
		u.files = append(u.files, f)
		u.names = append(u.names, rel)
	}
	// The program: each folder's package with its in-package tests, and its external tests.
	dirs := make([]string, 0, len(w.dirs))
	for d := range w.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		for _, name := range sortedKeys(w.dirs[dir]) {
			u := w.dirs[dir][name]
			info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
			w.check(w.importPath(dir)+suffix(name), u.files, info)
			w.infos = append(w.infos, info)
			for _, rel := range u.names {
				w.byFile[rel] = append(w.byFile[rel], info)
			}
		}
	}
	return w
}

func suffix(name string) string {
	if strings.HasSuffix(name, "_test") {
		return "_test"
	}
	return ""
}

func sortedKeys(m map[string]*unit) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (w *world) importPath(dir string) string {
	if dir == "." {
		return w.module
	}
	return w.module + "/" + dir
}

func (w *world) check(importPath string, files []*ast.File, info *types.Info) *types.Package {
	conf := types.Config{Importer: w, Error: func(error) {}, FakeImportC: true}
	pkg, _ := conf.Check(importPath, w.fset, files, info)
	return pkg
}

// Import: a package of the module from its files (without tests), the standard library from the
// toolchain, anything else as an empty package.
func (w *world) Import(p string) (*types.Package, error) {
	if pkg, ok := w.imported[p]; ok {
		return pkg, nil
	}
	var pkg *types.Package
	if w.module != "" && (p == w.module || strings.HasPrefix(p, w.module+"/")) {
		dir := strings.TrimPrefix(strings.TrimPrefix(p, w.module), "/")
		if dir == "" {
			dir = "."
		}
		var files []*ast.File
		for name, u := range w.dirs[dir] {
			if strings.HasSuffix(name, "_test") {
				continue
			}
			for i, f := range u.files {
				if !strings.HasSuffix(u.names[i], "_test.go") {
					files = append(files, f)
				}
			}
		}
		w.imported[p] = types.NewPackage(p, path.Base(p)) // a cycle meets an empty package
		pkg = w.check(p, files, nil)
	} else if std, err := w.std.Import(p); err == nil {
		pkg = std
	} else {
		name := path.Base(p)
		if strings.HasPrefix(name, "v") && len(name) <= 3 {
			name = path.Base(path.Dir(p))
		}
		pkg = types.NewPackage(p, strings.ReplaceAll(name, "-", "_"))
		pkg.MarkComplete()
	}
	w.imported[p] = pkg
	return pkg, nil
}

type place struct {
	File       string `json:"file"`
	Line       int    `json:"line"`
	Definition bool   `json:"definition"`
}

type spot struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Outside bool   `json:"outside,omitempty"`
}

// The object declared or used at file:line:column (0-based), with the infos holding the file.
func (w *world) objectAt(rel string, line, column int) types.Object {
	f := w.parsed[rel]
	if f == nil {
		return nil
	}
	var at *ast.Ident
	ast.Inspect(f, func(n ast.Node) bool {
		if at != nil {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			p := w.fset.Position(id.Pos())
			if p.Line == line && p.Column == column+1 {
				at = id
			}
		}
		return true
	})
	if at == nil {
		return nil
	}
	for _, info := range w.byFile[rel] {
		if obj := info.Defs[at]; obj != nil {
			return obj
		}
		if obj := info.Uses[at]; obj != nil {
			return obj
		}
	}
	return nil
}

func (w *world) key(obj types.Object) string {
	if obj == nil || !obj.Pos().IsValid() {
		return ""
	}
	p := w.fset.Position(obj.Pos())
	return fmt.Sprintf("%s:%d:%d:%s", p.Filename, p.Line, p.Column, obj.Name())
}

func (w *world) relative(filename string) (string, bool) {
	if !filepath.IsAbs(filename) {
		return filename, false // the standard library's export data: $GOROOT/src/…
	}
	rel, err := filepath.Rel(w.root, filename)
	if err != nil || strings.HasPrefix(rel, "..") {
		return filename, false
	}
	return filepath.ToSlash(rel), true
}

func kind(obj types.Object) string {
	switch o := obj.(type) {
	case *types.Func:
		if sig, ok := o.Type().(*types.Signature); ok && sig.Recv() != nil {
			return "method"
		}
		return "func"
	case *types.TypeName:
		return "type"
	case *types.Const:
		return "const"
	case *types.Var:
		if o.IsField() {
			return "field"
		}
		return "var"
	}
	return ""
}

func (w *world) refs(rel string, line, column int) interface{} {
	obj := w.objectAt(rel, line, column)
	target := w.key(obj)
	if target == "" {
		return map[string]interface{}{"refs": nil}
	}
	out := []place{}
	seen := map[string]bool{}
	add := func(id *ast.Ident, definition bool) {
		p := w.fset.Position(id.Pos())
		file, inside := w.relative(p.Filename)
		k := fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column)
		if !inside || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, place{file, p.Line, definition})
	}
	for _, info := range w.infos {
		for id, o := range info.Uses {
			if w.key(origin(o)) == target {
				add(id, false)
			}
		}
		for id, o := range info.Defs {
			if o != nil && w.key(o) == target {
				add(id, true)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return map[string]interface{}{"refs": out, "kind": kind(obj)}
}

// origin: a generic function's or method's declaration, for a use of an instance.
func origin(o types.Object) types.Object {
	switch x := o.(type) {
	case *types.Func:
		return x.Origin()
	case *types.Var:
		return x.Origin()
	}
	return o
}

func (w *world) gotoDef(rel string, line, column int) interface{} {
	obj := w.objectAt(rel, line, column)
	if obj == nil || !obj.Pos().IsValid() {
		return map[string]interface{}{"definitions": []spot{}}
	}
	p := w.fset.Position(origin(obj).Pos())
	file, inside := w.relative(p.Filename)
	return map[string]interface{}{"definitions": []spot{{file, p.Line, !inside}}}
}
