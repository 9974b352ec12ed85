package manifests

import (
	"fmt"
	"io"
)

// Report is what CheckDir found: the objects and the config files they carry.
type Report struct {
	Objects     []Object
	ConfigFiles []ConfigFile
}

// CheckDir runs every check on the manifests in deployDir: each object as
// the API server would on create (LoadDir), the objects together against the
// environment variables documented in docsDir (Set.Check), and the syntax of
// every config file a container reads through CONFIG_FILE.
func CheckDir(deployDir, docsDir string) (*Report, error) {
	objs, err := LoadDir(deployDir)
	if err != nil {
		return nil, err
	}
	return CheckObjects(objs, docsDir)
}

// CheckObjects is CheckDir on objects already loaded.
func CheckObjects(objs []Object, docsDir string) (*Report, error) {
	documented, err := DocumentedEnv(docsDir)
	if err != nil {
		return nil, err
	}
	set, err := NewSet(objs)
	if err != nil {
		return nil, err
	}
	if err := set.Check(documented); err != nil {
		return nil, err
	}
	files, err := set.ConfigFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := CheckConfigSyntax(f.Data); err != nil {
			return nil, fmt.Errorf("ConfigMap %s key %s (read as %s): %w", f.ConfigMap, f.Key, f.Path, err)
		}
	}
	return &Report{Objects: objs, ConfigFiles: files}, nil
}

// Print writes one line per object and config file.
func (r *Report) Print(w io.Writer) {
	for _, o := range r.Objects {
		fmt.Fprintf(w, "ok  %-45s %s\n", o.Name(), o.Source)
	}
	for _, f := range r.ConfigFiles {
		fmt.Fprintf(w, "ok  config file %s (ConfigMap %s, key %s): version v1\n", f.Path, f.ConfigMap, f.Key)
	}
}
