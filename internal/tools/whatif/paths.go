package whatif

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Stdin is the path that names standard input (kubectl get ... -o yaml |
// nodewright doctor -f -).
const Stdin = "-"

// NothingReadError is a file that holds no document nodewright reads.
type NothingReadError struct {
	// Held are the kinds and names the file holds.
	Held []string
	msg  string
}

func (e *NothingReadError) Error() string { return e.msg }

// LoadPaths reads manifests from files, directories (recursively: their
// .yaml, .yml and .json files, in name order) and standard input ("-",
// once). In a directory a file with nothing nodewright reads (a
// Service) is skipped and listed; given by name it is an error. A
// directory with a kustomization, or a Helm chart (Chart.yaml), is read
// as it renders (kustomize build, helm template with its default
// values), not file by file. The same object in two places is an error
// naming both.
func LoadPaths(paths []string, stdin io.Reader) (*Objects, error) {
	o := &Objects{}
	if err := o.ReadPaths(paths, stdin); err != nil {
		return nil, err
	}
	return o, nil
}

// ReadPaths reads files, directories and standard input into o, as
// LoadPaths does.
func (o *Objects) ReadPaths(paths []string, stdin io.Reader) error {
	readStdin := false
	for _, path := range paths {
		if path == Stdin {
			if readStdin {
				return errors.New("-f -: standard input can be read once")
			}
			readStdin = true
			if err := o.Load("<stdin>", stdin); err != nil {
				return err
			}
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("-f %s: %w", path, err)
		}
		if !info.IsDir() {
			// A kustomization file, or a chart's Chart.yaml, named
			// alone: its directory is what renders.
			base := filepath.Base(path)
			if slices.Contains(kustomizationFiles, base) || base == "Chart.yaml" {
				name, run := renderer(filepath.Dir(path))
				if err := o.loadRendered(filepath.Dir(path), name, run); err != nil {
					return err
				}
				continue
			}
			if err := o.loadFile(path); err != nil {
				return err
			}
			continue
		}
		if err := o.loadDir(path); err != nil {
			return err
		}
	}
	return nil
}

// loadDir reads a directory's manifests, recursively.
func (o *Objects) loadDir(dir string) error {
	var files []string
	type render struct {
		dir, name string
		run       func(string) ([]byte, error)
	}
	var renders []render
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git and the like
		}
		if d.IsDir() {
			// A kustomization or a chart is read as it renders, not file
			// by file: its patches and templates are not manifests.
			if name, run := renderer(path); run != nil {
				renders = append(renders, render{path, name, run})
				return filepath.SkipDir
			}
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if d.IsDir() {
				return nil
			}
			// A FIFO, socket or device in a directory is not a manifest:
			// opening a FIFO blocks until something writes to it, a device
			// may never end. Named on its own with -f, it is read.
			if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
				o.Ignored = append(o.Ignored, fmt.Sprintf("%s: not a regular file (%s), not read", path, fileKind(info, err)))
				return nil
			}
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("-f %s: %w", dir, err)
	}
	for _, r := range renders {
		if err := o.loadRendered(r.dir, r.name, r.run); err != nil {
			return err
		}
	}
	if len(files) == 0 {
		if len(renders) > 0 {
			return nil
		}
		return fmt.Errorf("-f %s: the directory holds no .yaml, .yml or .json file", dir)
	}
	slices.Sort(files)
	read := len(renders)
	for _, f := range files {
		skipped := len(o.Skipped)
		err := o.loadFile(f)
		var nothing *NothingReadError
		switch {
		case errors.As(err, &nothing):
			o.Ignored = append(o.Ignored, fmt.Sprintf("%s: nothing nodewright reads (%s)", f, strings.Join(nothing.Held, ", ")))
			o.Skipped = o.Skipped[:skipped]
		case err != nil:
			return err
		default:
			read++
		}
	}
	if read == 0 {
		return fmt.Errorf("-f %s: none of its %d files holds a document nodewright reads (%s)", dir, len(files), ReadKinds)
	}
	return nil
}

func (o *Objects) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return o.Load(path, f)
}

// clusterScoped are the kinds read that have no namespace.
var clusterScoped = map[string]bool{"NodePool": true, "NodeClaim": true, "EC2NodeClass": true, "NodeOverlay": true, "Node": true,
	"Namespace": true, "PersistentVolume": true, "StorageClass": true, "CSINode": true}

// remember records where an object was read, and refuses a second one of
// the same kind and name: which of two the user meant is not
// nodewright's to guess.
func (o *Objects) remember(kind, namespace, name string) error {
	if clusterScoped[kind] {
		namespace = ""
	} else if namespace == "" {
		namespace = "default"
	}
	key := kind + "/" + namespace + "/" + name
	if o.where == nil {
		o.where = map[string]position{}
	}
	if first, ok := o.where[key]; ok {
		what := kind + " " + name
		if namespace != "" {
			what = kind + " " + namespace + "/" + name
		}
		return fmt.Errorf("%s is also in %s:%d: the same object twice; remove one of them", what, first.file, first.line)
	}
	o.where[key] = o.at
	return nil
}

// fileKind says what a file that is not a regular one is.
func fileKind(info fs.FileInfo, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case info.Mode()&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case info.Mode()&fs.ModeSocket != 0:
		return "a socket"
	case info.Mode()&fs.ModeDevice != 0:
		return "a device"
	}
	return info.Mode().Type().String()
}
