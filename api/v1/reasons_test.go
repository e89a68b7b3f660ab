package v1_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The reasons of events and status conditions are part of what users and
// nodewright doctor read, so each one is a constant of the API packages
// (api/v1, api/aws/v1, api/v1alpha1) and never a string written where it
// is used. The production code under internal/ and cmd/ is read (the
// simulated world in internal/sim keeps its own), and every reason given
// to an event recorder (Event, Eventf, AnnotatedEventf), to a
// metav1.Condition, or to a function of the same package that passes one
// of its parameters on to either, must not be a string literal other than
// "", be built from one, or be a constant declared outside the API
// packages; nor may a local variable that becomes a reason be set to one,
// or a function of the package that gives a reason return one.
func TestReasonsAreAPIConstants(t *testing.T) {
	fset, dirs, packages := readProduction(t)
	seen := 0
	for _, dir := range dirs {
		pkg := newPackageScan(packages[dir])
		pkg.reasons(func(s *scope, e ast.Expr, what string) {
			seen++
			if why := pkg.wrong(s, e, map[string]bool{}); why != "" {
				t.Errorf("%s: %s is %s; use a constant of api/v1 (NodeClaims, NodePools, pods, nodes), api/v1alpha1 (NodeOverlays) or api/aws/v1 (EC2NodeClasses, interruption)",
					where(fset, e), what, why)
			}
		})
	}
	if seen == 0 {
		t.Fatalf("found no event or condition reason under %s: the test reads the repository relative to api/v1", root)
	}
}

// What reads reasons (nodewright doctor above all) compares them with the
// API packages' constants, never with a string written in place: the
// Reason of anything is not compared with a string literal other than "",
// nor switched on with one.
func TestReasonsAreComparedWithAPIConstants(t *testing.T) {
	fset, dirs, packages := readProduction(t)
	isReason := func(e ast.Expr) bool {
		sel, ok := unparen(e).(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Reason"
	}
	isLiteral := func(e ast.Expr) bool {
		lit, ok := unparen(e).(*ast.BasicLit)
		return ok && lit.Kind == token.STRING && lit.Value != `""` && lit.Value != "``"
	}
	for _, dir := range dirs {
		for _, f := range packages[dir] {
			ast.Inspect(f.ast, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BinaryExpr:
					if n.Op != token.EQL && n.Op != token.NEQ {
						return true
					}
					for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
						if isReason(pair[0]) && isLiteral(pair[1]) {
							t.Errorf("%s: a Reason is compared with the string literal %s; compare it with the API packages' constant", where(fset, pair[1]), pair[1].(*ast.BasicLit).Value)
						}
					}
				case *ast.SwitchStmt:
					if n.Tag == nil || !isReason(n.Tag) {
						return true
					}
					for _, stmt := range n.Body.List {
						for _, e := range stmt.(*ast.CaseClause).List {
							if isLiteral(e) {
								t.Errorf("%s: a switch on a Reason has the case %s; use the API packages' constant", where(fset, e), e.(*ast.BasicLit).Value)
							}
						}
					}
				}
				return true
			})
		}
	}
}

// root is the repository, seen from api/v1.
var root = filepath.Join("..", "..")

// readProduction parses the production code under internal/ and cmd/
// but the simulated world, by package directory.
func readProduction(t *testing.T) (*token.FileSet, []string, map[string][]*sourceFile) {
	t.Helper()
	skip := filepath.Join(root, "internal", "sim")
	packages := map[string][]*sourceFile{}
	var dirs []string
	fset := token.NewFileSet()
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path == skip || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			dir := filepath.Dir(path)
			if packages[dir] == nil {
				dirs = append(dirs, dir)
			}
			packages[dir] = append(packages[dir], newSourceFile(f))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return fset, dirs, packages
}

// where is the file and line of e, the file relative to the repository.
func where(fset *token.FileSet, e ast.Node) string {
	pos := fset.Position(e.Pos())
	rel, err := filepath.Rel(root, pos.Filename)
	if err != nil {
		rel = pos.Filename
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), pos.Line)
}

const (
	apiPrefix = "github.com/nodewright/nodewright/api/"
	metaV1    = "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventReasonArg is the position of the reason among the arguments of an
// event recorder's methods.
var eventReasonArg = map[string]int{"Event": 2, "Eventf": 2, "AnnotatedEventf": 3}

// conditionReasonField is the position of Reason in an unkeyed
// metav1.Condition literal.
const conditionReasonField = 4

type sourceFile struct {
	ast *ast.File
	// imports maps the name an import goes by in the file to its path.
	imports map[string]string
}

func newSourceFile(f *ast.File) *sourceFile {
	sf := &sourceFile{ast: f, imports: map[string]string{}}
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if spec.Name != nil {
			name = spec.Name.Name
		}
		sf.imports[name] = path
	}
	return sf
}

// isCondition reports whether t is metav1.Condition or a pointer to it.
func (f *sourceFile) isCondition(t ast.Expr) bool {
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	sel, ok := t.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Condition" {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && f.imports[x.Name] == metaV1
}

// holdsConditions reports whether t is a slice, array or map of
// conditions, whose literals may leave out the conditions' type.
func (f *sourceFile) holdsConditions(t ast.Expr) bool {
	switch t := t.(type) {
	case *ast.ArrayType:
		return f.isCondition(t.Elt)
	case *ast.MapType:
		return f.isCondition(t.Value)
	}
	return false
}

// isConditionLiteral reports whether e is a metav1.Condition literal or
// its address.
func (f *sourceFile) isConditionLiteral(e ast.Expr) bool {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	return ok && f.isCondition(lit.Type)
}

// scope is a function being read (or a file's declarations outside
// functions, with no function).
type scope struct {
	file *sourceFile
	fn   *ast.FuncDecl
	// params are the function's parameters by position.
	params map[string]int
	// values are what the function assigns to each local name, and
	// results the calls of which it assigns a result to one.
	values  map[string][]ast.Expr
	results map[string][]callResult
	// conditions are the local names that hold a metav1.Condition.
	conditions map[string]bool
	// returns are the function's return statements.
	returns []*ast.ReturnStmt
}

func newScope(f *sourceFile, fn *ast.FuncDecl) *scope {
	s := &scope{file: f, fn: fn, params: map[string]int{}, values: map[string][]ast.Expr{}, results: map[string][]callResult{}, conditions: map[string]bool{}}
	if fn == nil {
		return s
	}
	i := 0
	for _, field := range fn.Type.Params.List {
		for _, name := range field.Names {
			s.params[name.Name] = i
			if f.isCondition(field.Type) {
				s.conditions[name.Name] = true
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	if fn.Body == nil {
		return s
	}
	bind := func(names []ast.Expr, values []ast.Expr) {
		call, tuple := (*ast.CallExpr)(nil), false
		if len(values) == 1 && len(names) > 1 {
			call, tuple = values[0].(*ast.CallExpr)
		}
		for i, name := range names {
			id, ok := name.(*ast.Ident)
			switch {
			case !ok:
			case tuple:
				s.results[id.Name] = append(s.results[id.Name], callResult{call: call, at: i})
			case i < len(values):
				s.values[id.Name] = append(s.values[id.Name], values[i])
				if f.isConditionLiteral(values[i]) {
					s.conditions[id.Name] = true
				}
			}
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			bind(n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			names := make([]ast.Expr, len(n.Names))
			for i, name := range n.Names {
				names[i] = name
				if n.Type != nil && f.isCondition(n.Type) {
					s.conditions[name.Name] = true
				}
			}
			bind(names, n.Values)
		case *ast.ReturnStmt:
			s.returns = append(s.returns, n)
		case *ast.FuncLit:
			// Its returns are not the function's; its assignments are
			// read with the function's.
			ast.Inspect(n.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					bind(n.Lhs, n.Rhs)
				case *ast.FuncLit:
					return false
				}
				return true
			})
			return false
		}
		return true
	})
	return s
}

// callResult is one result of a call.
type callResult struct {
	call *ast.CallExpr
	at   int
}

// name is the function's name, or "" outside functions.
func (s *scope) name() string {
	if s.fn == nil {
		return ""
	}
	return s.fn.Name.Name
}

// funcKey names a function or method of the package being read.
type funcKey struct {
	name   string
	method bool
}

// packageScan reads the files of one package: its constants and the
// functions that pass a parameter on as a reason.
type packageScan struct {
	scopes    []*scope
	funcs     map[funcKey][]*scope
	constants map[string]bool
	// forwarders are the functions that pass the parameters at these
	// positions on as a reason.
	forwarders map[funcKey]map[int]bool
}

func newPackageScan(files []*sourceFile) *packageScan {
	p := &packageScan{funcs: map[funcKey][]*scope{}, constants: map[string]bool{}, forwarders: map[funcKey]map[int]bool{}}
	for _, f := range files {
		p.scopes = append(p.scopes, newScope(f, nil))
		for _, decl := range f.ast.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				s := newScope(f, decl)
				p.scopes = append(p.scopes, s)
				key := funcKey{name: decl.Name.Name, method: decl.Recv != nil}
				p.funcs[key] = append(p.funcs[key], s)
			case *ast.GenDecl:
				if decl.Tok != token.CONST {
					continue
				}
				for _, spec := range decl.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						p.constants[name.Name] = true
					}
				}
			}
		}
	}
	// A function that hands a parameter to another that passes it on
	// passes it on too: read until nothing new is found.
	for changed := true; changed; {
		changed = false
		p.reasons(func(s *scope, e ast.Expr, _ string) {
			id, ok := unparen(e).(*ast.Ident)
			if !ok || s.fn == nil {
				return
			}
			at, ok := s.params[id.Name]
			key := funcKey{name: s.fn.Name.Name, method: s.fn.Recv != nil}
			if !ok || p.forwarders[key][at] {
				return
			}
			if p.forwarders[key] == nil {
				p.forwarders[key] = map[int]bool{}
			}
			p.forwarders[key][at] = true
			changed = true
		})
	}
	return p
}

// reasons calls found with each expression of the package that becomes
// the reason of an event or a condition, and says where it goes.
func (p *packageScan) reasons(found func(s *scope, e ast.Expr, what string)) {
	for _, s := range p.scopes {
		var nodes []ast.Node
		if s.fn != nil {
			nodes = append(nodes, s.fn)
		} else {
			for _, decl := range s.file.ast.Decls {
				if _, ok := decl.(*ast.GenDecl); ok {
					nodes = append(nodes, decl)
				}
			}
		}
		for _, n := range nodes {
			p.inspect(s, n, func(e ast.Expr, what string) { found(s, e, what) })
		}
	}
}

func (p *packageScan) inspect(s *scope, n ast.Node, found func(e ast.Expr, what string)) {
	f := s.file
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			p.call(f, n, found)
		case *ast.CompositeLit:
			switch {
			case f.isCondition(n.Type):
				conditionReason(n, found)
			case f.holdsConditions(n.Type):
				for _, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						elt = kv.Value
					}
					if lit, ok := elt.(*ast.CompositeLit); ok && lit.Type == nil {
						conditionReason(lit, found)
					}
				}
			}
		case *ast.AssignStmt:
			if len(n.Lhs) != len(n.Rhs) {
				return true
			}
			for i, lhs := range n.Lhs {
				sel, ok := lhs.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Reason" {
					continue
				}
				if x, ok := sel.X.(*ast.Ident); ok && s.conditions[x.Name] {
					found(n.Rhs[i], "the Reason of a metav1.Condition")
				}
			}
		}
		return true
	})
}

func (p *packageScan) call(f *sourceFile, call *ast.CallExpr, found func(e ast.Expr, what string)) {
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		if at, ok := eventReasonArg[sel.Sel.Name]; ok && len(call.Args) > at {
			found(call.Args[at], "the reason given to "+sel.Sel.Name)
			return
		}
	}
	key, ok := callee(f, call)
	if !ok {
		return
	}
	for at := range p.forwarders[key] {
		if at < len(call.Args) {
			found(call.Args[at], "the reason given to "+key.name)
		}
	}
}

// callee names the function of this package a call calls, if it is one.
func callee(f *sourceFile, call *ast.CallExpr) (funcKey, bool) {
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		return funcKey{name: fun.Name}, true
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok && f.imports[x.Name] != "" {
			return funcKey{}, false // a function of another package
		}
		return funcKey{name: fun.Sel.Name, method: true}, true
	}
	return funcKey{}, false
}

func conditionReason(lit *ast.CompositeLit, found func(e ast.Expr, what string)) {
	for i, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Reason" {
				found(kv.Value, "the Reason of a metav1.Condition")
			}
		} else if i == conditionReasonField {
			found(elt, "the Reason of a metav1.Condition")
		}
	}
}

// wrong says what is wrong with a reason, or "" when it is a constant of
// the API packages or a value computed elsewhere. A local variable is
// judged by what the function assigns to it, and the result of a function
// of the package by what the function returns.
func (p *packageScan) wrong(s *scope, e ast.Expr, followed map[string]bool) string {
	switch e := unparen(e).(type) {
	case *ast.BasicLit:
		// An empty string names no reason: it is what a function that
		// gives a reason only sometimes is passed the other times.
		if e.Kind == token.STRING && e.Value != `""` && e.Value != "``" {
			return "the string literal " + e.Value
		}
	case *ast.BinaryExpr:
		if why := p.wrong(s, e.X, followed); why != "" {
			return "built from " + why
		}
		return p.wrong(s, e.Y, followed)
	case *ast.CallExpr:
		return p.wrongResult(s, callResult{call: e}, followed)
	case *ast.Ident:
		values, local := s.values[e.Name]
		results, returned := s.results[e.Name]
		if local || returned {
			if followed[s.name()+"."+e.Name] {
				return ""
			}
			followed[s.name()+"."+e.Name] = true
			for _, v := range values {
				if why := p.wrong(s, v, followed); why != "" {
					return "set to " + why
				}
			}
			for _, r := range results {
				if why := p.wrongResult(s, r, followed); why != "" {
					return why
				}
			}
			return ""
		}
		if _, param := s.params[e.Name]; !param && p.constants[e.Name] {
			return "the constant " + e.Name + " declared outside the API packages"
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if path := s.file.imports[x.Name]; path != "" && !strings.HasPrefix(path, apiPrefix) {
				return x.Name + "." + e.Sel.Name + " of " + path + ", not of the API packages"
			}
		}
	}
	return ""
}

// wrongResult says what is wrong with a result of a call of a function
// of the package, as its return statements give it.
func (p *packageScan) wrongResult(s *scope, r callResult, followed map[string]bool) string {
	key, ok := callee(s.file, r.call)
	if !ok || followed["func "+key.name] {
		return ""
	}
	followed["func "+key.name] = true
	for _, fn := range p.funcs[key] {
		for _, ret := range fn.returns {
			if r.at >= len(ret.Results) {
				continue
			}
			if why := p.wrong(fn, ret.Results[r.at], followed); why != "" {
				return fmt.Sprintf("returned by %s as %s", key.name, why)
			}
		}
	}
	return ""
}

func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}
