// Package version reports which nodewright this is.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with
// -ldflags "-X github.com/nodewright/nodewright/internal/version.version=v1.2.3".
var version = ""

// commit is set at build time with
// -ldflags "-X github.com/nodewright/nodewright/internal/version.commit=SHA"
// (make build does both); without it, the VCS revision Go recorded.
var commit = ""

// Info describes a nodewright build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version: the one stamped at build time, else the
// module version Go recorded, else "devel"; and the VCS commit when known.
func Get() Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if build, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && build.Main.Version != "" && build.Main.Version != "(devel)" {
			info.Version = build.Main.Version
		}
		for _, s := range build.Settings {
			if s.Key == "vcs.revision" && info.Commit == "" {
				info.Commit = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// String is the one-line form `nodewright version` prints.
func (i Info) String() string {
	s := "nodewright " + i.Version
	if i.Commit != "" {
		s += " (commit " + i.Commit + ")"
	}
	return fmt.Sprintf("%s %s %s", s, i.GoVersion, i.Platform)
}
