package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/convert"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

func newConvertCommand() *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "convert -f FILE...",
		Short: "Print older Karpenter API objects (v1beta1, v1alpha5) as the v1 objects to commit",
		Long: `convert reads manifests and prints them again with every object of an
older API as the v1 object it becomes:

  karpenter.sh/v1beta1 NodePool, NodeClaim and karpenter.k8s.aws/v1beta1
  EC2NodeClass: as Karpenter v1.0's conversion webhook converts them;
  karpenter.sh/v1alpha5 Provisioner and karpenter.k8s.aws/v1alpha1
  AWSNodeTemplate: by the field mapping of the v0.32 upgrade guide, keeping
  what the nodes did (v1alpha5's default requirements written out, no
  expiry or consolidation where the Provisioner had none), then as v1beta1.

A NodePool's kubelet configuration moves to its EC2NodeClass's
spec.kubelet; NodePools that shared a class with different ones get a copy
of the class each. Server-set metadata and status are dropped; documents of
the current APIs and of other kinds are printed as they are. What changed
is written to standard error. Every object printed is checked as
nodewright doctor checks the v1 objects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("convert needs -f FILE (or -f - for standard input)")
			}
			objs := &whatif.Objects{KeepDocuments: true}
			if err := objs.ReadPaths(files, cmd.InOrStdin()); err != nil {
				return err
			}
			return writeConverted(cmd.OutOrStdout(), cmd.ErrOrStderr(), objs)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, directory or - for standard input (repeatable)")
	return cmd
}

// writeConverted prints every document read, converted ones as their v1
// objects.
func writeConverted(out, errOut io.Writer, objs *whatif.Objects) error {
	converted := 0
	for i, d := range objs.Documents {
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		made := objs.ConvertedAt(d.File, d.Line)
		if made == nil {
			if _, err := fmt.Fprintf(out, "%s\n", bytes.TrimRight(d.Body, "\n")); err != nil {
				return err
			}
			continue
		}
		for j, obj := range made {
			if j > 0 {
				fmt.Fprintln(out, "---")
			}
			data, err := committable(obj)
			if err != nil {
				return err
			}
			if _, err := out.Write(data); err != nil {
				return err
			}
			converted++
		}
	}
	for _, c := range objs.Conversions {
		where := ""
		if c.File != "" {
			where = fmt.Sprintf("%s:%d: ", c.File, c.Line)
		}
		from := c.From
		if from == "" {
			from = "v1 " + c.Object
		}
		fmt.Fprintf(errOut, "%s%s -> %s\n", where, from, c.Object)
		for _, n := range c.Notes {
			fmt.Fprintf(errOut, "  %s\n", n)
		}
	}
	for _, p := range objs.NodePools {
		class := "its EC2NodeClass"
		if ref := p.Spec.Template.Spec.NodeClassRef; ref != nil {
			class = "EC2NodeClass " + ref.Name
		}
		if kubelet, _, err := convert.Unsettled(p, nil); err == nil && kubelet != "" {
			fmt.Fprintf(errOut, "warning: NodePool %s keeps annotation %s (%s): %s is not among the inputs, or has a spec.kubelet of its own that differs; the objects launch with the class's\n", p.Name, convert.KubeletAnnotation, kubelet, class)
		}
	}
	if converted == 0 {
		fmt.Fprintln(errOut, "nothing to convert: every object is of the current APIs")
	}
	return nil
}

// committable is an object as YAML a user commits: without its status and
// the metadata the API server sets.
func committable(obj runtime.Object) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "finalizers", "deletionTimestamp"} {
			delete(meta, k)
		}
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
			delete(ann, convert.StoredVersionMigrated)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return yaml.Marshal(m)
}
