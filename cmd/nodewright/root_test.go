package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func run(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run("version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "nodewright ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version printed %q", out)
	}
	if _, err := run("version", "extra"); err == nil {
		t.Error("version accepted an argument")
	}
}

// Only subcommands that work exist: help lists nothing that is not built.
func TestHelpListsOnlyWorkingCommands(t *testing.T) {
	out, err := run("--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"controller", "sim", "doctor", "userdata"} {
		if strings.Contains(out, "\n  "+absent+" ") {
			t.Errorf("help lists %q, which does not exist yet:\n%s", absent, out)
		}
	}
	if _, err := run("sim"); err == nil || !strings.Contains(err.Error(), `unknown command "sim"`) {
		t.Errorf("running a missing subcommand: %v", err)
	}
}
