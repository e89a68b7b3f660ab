package shell

import (
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// tools are the file and text utilities the sandbox models, as GNU
// coreutils behave for the options user data scripts use; each works on
// the sandbox's files only.
var tools = map[string]func(s *sandbox, hc interp.HandlerContext, args []string) error{
	"cat":       (*sandbox).cat,
	"tee":       (*sandbox).tee,
	"cp":        (*sandbox).cp,
	"rm":        (*sandbox).rm,
	"base64":    (*sandbox).base64,
	"mkdir":     quiet,
	"chmod":     quiet,
	"chown":     quiet,
	"touch":     (*sandbox).touch,
	"sleep":     quiet,
	"sync":      quiet,
	"logger":    quiet,
	"systemctl": quiet,
}

func quiet(*sandbox, interp.HandlerContext, []string) error { return nil }

// operands are the arguments that are not options.
func operands(args []string) (opts, names []string) {
	done := false
	for _, a := range args {
		switch {
		case done || a == "-" || !strings.HasPrefix(a, "-"):
			names = append(names, a)
		case a == "--":
			done = true
		default:
			opts = append(opts, a)
		}
	}
	return opts, names
}

func (s *sandbox) path(hc interp.HandlerContext, name string) string {
	if !path.IsAbs(name) {
		name = path.Join(hc.Dir, name)
	}
	return path.Clean(name)
}

// read gives a file's content: a marker naming a file outside the model.
func (s *sandbox) read(hc interp.HandlerContext, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(hc.Stdin, maxOutput))
	}
	p := s.path(hc, name)
	if data, ok := s.get(p); ok {
		return data, nil
	}
	return []byte(Unknown("the file " + p)), nil
}

func (s *sandbox) write(hc interp.HandlerContext, name string, data []byte, appendTo bool) error {
	if err := s.put(s.path(hc, name), data, appendTo); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *sandbox) fail(hc interp.HandlerContext, tool string, err error) error {
	fmt.Fprintf(hc.Stderr, "%s: %v\n", tool, err)
	return interp.ExitStatus(1)
}

func (s *sandbox) cat(hc interp.HandlerContext, args []string) error {
	_, names := operands(args)
	if len(names) == 0 {
		names = []string{"-"}
	}
	for _, n := range names {
		data, err := s.read(hc, n)
		if err != nil {
			return s.fail(hc, "cat", err)
		}
		_, _ = hc.Stdout.Write(data)
	}
	return nil
}

func (s *sandbox) tee(hc interp.HandlerContext, args []string) error {
	opts, names := operands(args)
	data, err := s.read(hc, "-")
	if err != nil {
		return s.fail(hc, "tee", err)
	}
	appendTo := containsString(opts, "-a") || containsString(opts, "--append")
	for _, n := range names {
		if err := s.write(hc, n, data, appendTo); err != nil {
			return s.fail(hc, "tee", err)
		}
	}
	_, _ = hc.Stdout.Write(data)
	return nil
}

func (s *sandbox) cp(hc interp.HandlerContext, args []string) error {
	_, names := operands(args)
	if len(names) < 2 {
		return s.fail(hc, "cp", fmt.Errorf("missing destination file operand"))
	}
	dst := s.path(hc, names[len(names)-1])
	for _, n := range names[:len(names)-1] {
		data, err := s.read(hc, n)
		if err != nil {
			return s.fail(hc, "cp", err)
		}
		target := dst
		if len(names) > 2 || s.isDir(dst) {
			target = path.Join(dst, path.Base(n))
		}
		if err := s.write(hc, target, data, false); err != nil {
			return s.fail(hc, "cp", err)
		}
	}
	return nil
}

func (s *sandbox) rm(hc interp.HandlerContext, args []string) error {
	_, names := operands(args)
	for _, n := range names {
		s.del(s.path(hc, n))
	}
	return nil
}

func (s *sandbox) touch(hc interp.HandlerContext, args []string) error {
	_, names := operands(args)
	for _, n := range names {
		if _, ok := s.get(s.path(hc, n)); !ok {
			if err := s.write(hc, n, nil, true); err != nil {
				return s.fail(hc, "touch", err)
			}
		}
	}
	return nil
}

func (s *sandbox) base64(hc interp.HandlerContext, args []string) error {
	opts, names := operands(args)
	name := "-"
	if len(names) > 0 {
		name = names[0]
	}
	data, err := s.read(hc, name)
	if err != nil {
		return s.fail(hc, "base64", err)
	}
	decode := containsString(opts, "-d") || containsString(opts, "--decode") || containsString(opts, "-di")
	if !decode {
		_, _ = io.WriteString(hc.Stdout, base64.StdEncoding.EncodeToString(data)+"\n")
		return nil
	}
	if len(Unknowns(string(data))) > 0 {
		_, _ = hc.Stdout.Write(data) // unknown in, unknown out
		return nil
	}
	out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(data)), ""))
	if err != nil {
		return s.fail(hc, "base64", fmt.Errorf("invalid input"))
	}
	_, _ = hc.Stdout.Write(out)
	return nil
}
