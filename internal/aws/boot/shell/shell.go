// Package shell runs a user data script with a real shell interpreter
// (mvdan.cc/sh's, bash's language) in a sandbox: no program is executed,
// no file of the machine is read or written, no network is reached, and a
// run is bounded in time and output. The commands a node image provides
// (bootstrap.sh, nodeadm) are handlers that see their arguments as the
// shell expands them and the environment it exports; a few file and text
// utilities are modelled; any other command succeeds and prints a marker
// that names it, so a value computed from it is known to be unknown.
package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Call is one run of a handled command.
type Call struct {
	// Args are the command's words as it receives them, its name first.
	Args []string
	// Env is the environment it is started with (the exported variables).
	Env map[string]string
}

// Handler runs a command the node image provides; its result is the
// command's exit status.
type Handler func(c Call) uint8

// Options say what the machine provides.
type Options struct {
	// Commands are handled commands, by base name (bootstrap.sh) or by
	// path.
	Commands map[string]Handler
	// Missing are commands the machine does not have: they fail with 127,
	// as a shell reports a command not found.
	Missing []string
	// Files are the files the machine has, by absolute path.
	Files map[string][]byte
	// Env is the script's starting environment.
	Env map[string]string
	// Timeout bounds a run (default 2s).
	Timeout time.Duration
	// Pessimist: commands outside the model whose exit status the script
	// tests (in an if, while or until condition, or before && or ||) fail,
	// and files outside the model exist. Running a script both ways shows
	// whether what it does depends on them.
	Pessimist bool
}

// Result is what a run did.
type Result struct {
	// Files are the files at the end, those the script wrote included.
	Files map[string][]byte
	// Written are the paths the script wrote, in order of first write.
	Written []string
	// Exit is the script's exit status.
	Exit uint8
	// Unmodelled are the commands outside the model the script ran, in
	// order, each once.
	Unmodelled []string
	// Err says why the run was stopped (time, output, a construct the
	// sandbox does not run).
	Err error
}

// maxOutput bounds what a run writes to files and standard output.
const maxOutput = 4 << 20

// Unknown is the marker for a value the model does not know: what a
// command outside it printed, or a file outside it held.
func Unknown(what string) string { return "\u27e6" + what + "\u27e7" }

// Unknowns are the unknown values named in s.
func Unknowns(s string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "\u27e6")
		if !ok {
			return out
		}
		what, after, ok := strings.Cut(rest, "\u27e7")
		if !ok {
			return out
		}
		if !slices.Contains(out, what) {
			out = append(out, what)
		}
		s = after
	}
}

// Run runs a script.
func Run(script []byte, opts Options) Result {
	params, err := shebang(script)
	if err != nil {
		return Result{Err: err}
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), "user-data")
	if err != nil {
		return Result{Err: fmt.Errorf("the script cannot be parsed as bash: %w", err), Exit: 2}
	}
	if construct := refused(file); construct != "" {
		return Result{Err: fmt.Errorf("the script uses %s, which the sandbox does not run", construct)}
	}
	s := &sandbox{opts: opts, files: maps.Clone(opts.Files), tested: testedCalls(file)}
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	substituteProcesses(file, s.files)
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.cancel = cancel
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "USER=root", "EUID=0",
		// The interpreter makes its FIFOs in TMPDIR outside the handlers:
		// a directory that does not exist keeps them off the machine.
		"TMPDIR=/nonexistent/sandbox"}
	for _, k := range slices.Sorted(maps.Keys(opts.Env)) {
		env = append(env, k+"="+opts.Env[k])
	}
	out := &limitedWriter{limit: maxOutput, over: s.overflow}
	runner, err := s.runner(env, "/", strings.NewReader(""), out, out, params)
	if err != nil {
		return Result{Err: err}
	}
	stop := watchMemory(cancel)
	runErr := runner.Run(ctx, file)
	overMemory := stop()
	res := Result{Files: s.files, Written: s.written, Unmodelled: s.unmodelled}
	var status interp.ExitStatus
	if errors.As(runErr, &status) {
		res.Exit = uint8(status)
	} else if runErr != nil {
		res.Exit = 1
		res.Err = runErr
	}
	switch {
	case s.over:
		res.Err = errors.New("the script wrote more than 4 MiB in the sandbox")
	case overMemory:
		res.Err = fmt.Errorf("the script used more than %d MiB in the sandbox", maxMemory>>20)
	case ctx.Err() != nil:
		res.Err = fmt.Errorf("the script ran longer than %s in the sandbox", timeout)
	}
	return res
}

// runner is an interpreter whose commands, files and directories are the
// sandbox's.
func (s *sandbox) runner(env []string, dir string, stdin io.Reader, stdout, stderr io.Writer, params []string) (*interp.Runner, error) {
	return interp.New(
		interp.Env(expand.ListEnviron(env...)),
		interp.Dir(dir),
		interp.StdIO(stdin, stdout, stderr),
		interp.Params(params...),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return s.exec }),
		interp.OpenHandler(s.open),
		interp.StatHandler(s.stat),
		interp.ReadDirHandler2(s.readDir),
		interp.AccessHandler(func(context.Context, string, interp.AccessMode) error { return nil }),
	)
}

// maxNesting bounds scripts that run scripts.
const maxNesting = 8

// scriptFile is the sandbox file a command runs as a shell script — bash
// FILE ARGS, or FILE ARGS for a file that starts with a shell's #! line —
// with the shell options it starts with and its arguments.
func (s *sandbox) scriptFile(dir string, args []string) (script []byte, name string, params []string, ok bool) {
	if i := scriptOperand(args); i > 0 {
		name = resolve(dir, args[i])
		if script, ok = s.get(name); ok {
			return script, name, append(slices.Clone(args[1:i]), append([]string{"--"}, args[i+1:]...)...), true
		}
		return nil, "", nil, false
	}
	if !strings.Contains(args[0], "/") {
		return nil, "", nil, false
	}
	name = resolve(dir, args[0])
	script, ok = s.get(name)
	if !ok || !bytes.HasPrefix(script, []byte("#!")) {
		return nil, "", nil, false
	}
	opts, err := shebang(script)
	if err != nil {
		return nil, "", nil, false
	}
	return script, name, append(opts, append([]string{"--"}, args[1:]...)...), true
}

func resolve(dir, name string) string {
	if !path.IsAbs(name) {
		name = path.Join(dir, name)
	}
	return path.Clean(name)
}

// runScript runs a sandbox file as a child shell would: the exported
// variables its environment, the caller's directory and output.
func (s *sandbox) runScript(ctx context.Context, script []byte, name string, params []string) error {
	hc := interp.HandlerCtx(ctx)
	s.mu.Lock()
	s.depth++
	depth := s.depth
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.depth--
		s.mu.Unlock()
	}()
	if depth > maxNesting {
		return fmt.Errorf("scripts run scripts more than %d deep", maxNesting)
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), name)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "%s: %v\n", name, err)
		return interp.ExitStatus(2)
	}
	if construct := refused(file); construct != "" {
		return fmt.Errorf("%s uses %s, which the sandbox does not run", name, construct)
	}
	s.mu.Lock()
	for pos := range testedCalls(file) {
		s.tested[pos] = true
	}
	substituteProcesses(file, s.files)
	s.mu.Unlock()
	var env []string
	hc.Env.Each(func(k string, v expand.Variable) bool {
		if v.Exported && v.Kind == expand.String {
			env = append(env, k+"="+v.Str)
		}
		return true
	})
	runner, err := s.runner(env, hc.Dir, hc.Stdin, hc.Stdout, hc.Stderr, params)
	if err != nil {
		return err
	}
	err = runner.Run(ctx, file)
	var status interp.ExitStatus
	if err == nil || errors.As(err, &status) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// shebang reads the script's #! line: the shell options it starts the
// shell with (#!/bin/bash -xe). A script for another interpreter is not
// run.
func shebang(script []byte) ([]string, error) {
	line, _, _ := bytes.Cut(script, []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return nil, nil
	}
	fields := strings.Fields(string(rest))
	if len(fields) > 0 && path.Base(fields[0]) == "env" {
		fields = fields[1:]
		for len(fields) > 0 && strings.HasPrefix(fields[0], "-") {
			fields = fields[1:] // env's own options
		}
	}
	if len(fields) == 0 {
		return nil, nil
	}
	if b := path.Base(fields[0]); b != "bash" && b != "sh" {
		return nil, fmt.Errorf("the script is for %s (%s), not a shell", b, strings.TrimSpace(string(line)))
	}
	// The kernel gives the interpreter what follows its path as one
	// argument: #!/bin/bash -xe starts bash with "-xe".
	if len(fields) == 1 {
		return nil, nil
	}
	arg := strings.Join(fields[1:], " ")
	if !shebangOptions.MatchString(arg) {
		return nil, fmt.Errorf("the script's #! line starts the shell with %q, which the sandbox does not model", arg)
	}
	params := []string{arg}
	return params, nil
}

// shebangOptions are the #! arguments the sandbox reads: shell option
// letters (-e, -xe, +x).
var shebangOptions = regexp.MustCompile(`^[-+][aefhkmnptuvxBCEHPT]+$`)

// maxMemory bounds the memory a run may take (a loop that doubles a
// variable, say): the run is stopped when the process's heap has grown
// by more since it started.
const maxMemory = 256 << 20

// watchMemory cancels the run when the heap grows by maxMemory; the
// function it returns stops watching and says whether it did.
func watchMemory(cancel context.CancelFunc) func() bool {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	start := heap()
	done := make(chan struct{})
	var over atomic.Bool
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if heap() > start+maxMemory {
					over.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	return func() bool {
		close(done)
		return over.Load()
	}
}

// refused finds a construct the sandbox does not run: coprocesses.
func refused(file *syntax.File) string {
	found := ""
	syntax.Walk(file, func(node syntax.Node) bool {
		if _, ok := node.(*syntax.CoprocClause); ok {
			found = "a coprocess"
		}
		return found == ""
	})
	return found
}

// substituteProcesses replaces process substitutions, for which the
// interpreter would make named pipes on the machine, with files of the
// sandbox: what >(CMD) is given is discarded (exec > >(tee LOG) logs the
// script, which changes nothing the boot reads), and <(CMD) reads a value
// the model does not know.
func substituteProcesses(file *syntax.File, files map[string][]byte) {
	n := 0
	syntax.Walk(file, func(node syntax.Node) bool {
		w, ok := node.(*syntax.Word)
		if !ok {
			return true
		}
		for i, part := range w.Parts {
			ps, ok := part.(*syntax.ProcSubst)
			if !ok {
				continue
			}
			target := "/dev/null"
			if ps.Op == syntax.CmdIn {
				n++
				target = fmt.Sprintf("/dev/fd/process-substitution-%d", n)
				files[target] = []byte(Unknown("what a process substitution prints"))
			}
			w.Parts[i] = &syntax.Lit{ValuePos: ps.OpPos, ValueEnd: ps.Rparen, Value: target}
		}
		return true
	})
}

// testedCalls are the positions of the commands whose exit status the
// script tests: in the condition of an if, while or until, on the left of
// && or ||, or negated.
func testedCalls(file *syntax.File) map[syntax.Pos]bool {
	tested := map[syntax.Pos]bool{}
	mark := func(stmts ...*syntax.Stmt) {
		for _, st := range stmts {
			syntax.Walk(st, func(node syntax.Node) bool {
				if call, ok := node.(*syntax.CallExpr); ok && len(call.Args) > 0 {
					tested[call.Pos()] = true
				}
				return true
			})
		}
	}
	syntax.Walk(file, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.IfClause:
			mark(n.Cond...)
		case *syntax.WhileClause:
			mark(n.Cond...)
		case *syntax.BinaryCmd:
			if n.Op == syntax.AndStmt || n.Op == syntax.OrStmt {
				mark(n.X)
			}
		case *syntax.Stmt:
			if n.Negated {
				mark(n)
			}
		}
		return true
	})
	return tested
}

type sandbox struct {
	opts       Options
	files      map[string][]byte
	written    []string
	unmodelled []string
	tested     map[syntax.Pos]bool
	depth      int
	size       int
	over       bool
	cancel     context.CancelFunc
	// mu guards the state above: a pipeline's commands run at once.
	mu sync.Mutex
	// handlerMu runs one handler at a time.
	handlerMu sync.Mutex
}

func (s *sandbox) isTested(pos syntax.Pos) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tested[pos]
}

func (s *sandbox) get(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.files[name]
	return data, ok
}

// put writes (or appends to) a file of the sandbox, within the output
// bound.
func (s *sandbox) put(name string, data []byte, appendTo bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.size += len(data)
	if s.size > maxOutput {
		s.overflowLocked()
		return errors.New("no space left on device")
	}
	if appendTo {
		s.files[name] = append(s.files[name], data...)
	} else {
		s.files[name] = bytes.Clone(data)
	}
	if !slices.Contains(s.written, name) {
		s.written = append(s.written, name)
	}
	return nil
}

func (s *sandbox) del(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, name)
}

func (s *sandbox) ran(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.unmodelled, base) {
		s.unmodelled = append(s.unmodelled, base)
	}
}

// overflow stops a run that has written too much.
func (s *sandbox) overflow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.overflowLocked()
}

func (s *sandbox) overflowLocked() {
	s.over = true
	if s.cancel != nil {
		s.cancel()
	}
}

func (s *sandbox) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	name := args[0]
	if script := scriptOperand(args); script > 0 && s.handler(hc.Dir, args[script]) != nil {
		// bash FILE ARGS runs the handled command as bash would run it.
		args = args[script:]
		name = args[0]
	}
	if h := s.handler(hc.Dir, name); h == nil {
		if script, file, params, ok := s.scriptFile(hc.Dir, args); ok {
			return s.runScript(ctx, script, file, params)
		}
	}
	if h := s.handler(hc.Dir, name); h != nil {
		env := map[string]string{}
		hc.Env.Each(func(k string, v expand.Variable) bool {
			if v.Exported && v.Kind == expand.String {
				env[k] = v.Str
			}
			return true
		})
		s.handlerMu.Lock()
		defer s.handlerMu.Unlock()
		return exitStatus(h(Call{Args: slices.Clone(args), Env: env}))
	}
	base := path.Base(name)
	if slices.Contains(s.opts.Missing, base) || slices.Contains(s.opts.Missing, name) {
		fmt.Fprintf(hc.Stderr, "%s: command not found\n", name)
		return interp.ExitStatus(127)
	}
	if tool, ok := tools[base]; ok {
		return tool(s, hc, args[1:])
	}
	s.ran(base)
	_, _ = io.WriteString(hc.Stdout, Unknown("what "+base+" prints"))
	if s.opts.Pessimist && s.isTested(hc.Pos) {
		return interp.ExitStatus(1)
	}
	return nil
}

// scriptOperand is the index of the script a shell is asked to run
// (bash [-ex...] FILE ARGS), 0 when the command is not that.
func scriptOperand(args []string) int {
	if b := path.Base(args[0]); b != "bash" && b != "sh" {
		return 0
	}
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c" || a == "-o" || strings.HasPrefix(a, "--"):
			return 0
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
		default:
			return i
		}
	}
	return 0
}

// handler finds the handler of a command: one named by its absolute path
// when the command is written as a path (relative to the directory the
// script is in), one named by its base name for a command on the PATH.
func (s *sandbox) handler(dir, name string) Handler {
	if !strings.Contains(name, "/") {
		return s.opts.Commands[name]
	}
	if !path.IsAbs(name) {
		name = path.Join(dir, name)
	}
	if h, ok := s.opts.Commands[path.Clean(name)]; ok {
		return h
	}
	if h, ok := s.opts.Commands[path.Base(name)]; ok {
		return h
	}
	return nil
}

func exitStatus(code uint8) error {
	if code == 0 {
		return nil
	}
	return interp.ExitStatus(code)
}

// open serves the sandbox's files: reading a file the model does not
// have gives a marker naming it; writing keeps the data in the sandbox.
func (s *sandbox) open(ctx context.Context, name string, flag int, _ os.FileMode) (io.ReadWriteCloser, error) {
	name = s.abs(ctx, name)
	switch name {
	case "/dev/null":
		return nopFile{Writer: io.Discard}, nil
	case "/dev/stdout", "/dev/stderr":
		return nopFile{Writer: interp.HandlerCtx(ctx).Stdout}, nil
	}
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		data, ok := s.get(name)
		if !ok {
			data = []byte(Unknown("the file " + name))
		}
		return nopFile{Reader: bytes.NewReader(data)}, nil
	}
	_, exists := s.get(name)
	if err := s.put(name, nil, exists && flag&os.O_TRUNC == 0); err != nil {
		return nil, err
	}
	return &sandboxFile{s: s, name: name}, nil
}

func (s *sandbox) abs(ctx context.Context, name string) string {
	if !path.IsAbs(name) {
		name = path.Join(interp.HandlerCtx(ctx).Dir, name)
	}
	return path.Clean(name)
}

func (s *sandbox) stat(ctx context.Context, name string, _ bool) (fs.FileInfo, error) {
	name = s.abs(ctx, name)
	if data, ok := s.get(name); ok {
		return fileInfo{name: path.Base(name), size: int64(len(data))}, nil
	}
	if s.isDir(name) {
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	if s.opts.Pessimist {
		return fileInfo{name: path.Base(name)}, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (s *sandbox) isDir(name string) bool {
	if name == "/" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range s.files {
		if strings.HasPrefix(f, name+"/") {
			return true
		}
	}
	return false
}

func (s *sandbox) readDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	name = s.abs(ctx, name)
	seen := map[string]bool{}
	var out []fs.DirEntry
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.files))
	s.mu.Unlock()
	for _, f := range names {
		rest, ok := strings.CutPrefix(f, strings.TrimSuffix(name, "/")+"/")
		if !ok {
			continue
		}
		first, _, deeper := strings.Cut(rest, "/")
		if !seen[first] {
			seen[first] = true
			out = append(out, fs.FileInfoToDirEntry(fileInfo{name: first, dir: deeper}))
		}
	}
	return out, nil
}

// sandboxFile appends what is written to a sandbox file.
type sandboxFile struct {
	s    *sandbox
	name string
}

func (f *sandboxFile) Read([]byte) (int, error) { return 0, io.EOF }
func (f *sandboxFile) Close() error             { return nil }
func (f *sandboxFile) Write(p []byte) (int, error) {
	if err := f.s.put(f.name, p, true); err != nil {
		return 0, err
	}
	return len(p), nil
}

type nopFile struct {
	io.Reader
	io.Writer
}

func (f nopFile) Read(p []byte) (int, error) {
	if f.Reader == nil {
		return 0, io.EOF
	}
	return f.Reader.Read(p)
}

func (f nopFile) Write(p []byte) (int, error) {
	if f.Writer == nil {
		return 0, errors.New("bad file descriptor")
	}
	return f.Writer.Write(p)
}
func (nopFile) Close() error { return nil }

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return f.size }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o755
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }

// limitedWriter discards output past its limit and remembers it was hit.
type limitedWriter struct {
	n, limit int
	over     func()
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n > w.limit {
		w.over()
	}
	return len(p), nil
}
