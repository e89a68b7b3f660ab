package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputFlag registers -o: table (for people; text for version), json or yaml.
func outputFlag(cmd *cobra.Command, o *string, human string) {
	cmd.Flags().StringVarP(o, "output", "o", human, "output format: "+human+", json or yaml")
	completeValues(cmd, "output", human, "json", "yaml")
}

// checkOutput refuses a format other than human, json and yaml.
func checkOutput(o, human string) error {
	switch o {
	case human, "json", "yaml":
		return nil
	}
	return fmt.Errorf("-o %q: use %s, json or yaml", o, human)
}

// writeStructured writes v as indented JSON or as YAML (the same fields).
func writeStructured(w io.Writer, format string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if format == "yaml" {
		out, err := yaml.JSONToYAML(buf.Bytes())
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
