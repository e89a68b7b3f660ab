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
// objects (in a List, item by item).
func writeConverted(out, errOut io.Writer, objs *whatif.Objects) error {
	converted := 0
	for i, d := range objs.Documents {
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		if objs.HasConversionsAt(d.File, d.Line) {
			n, err := writeConvertedList(out, objs, d)
			if err != nil {
				return err
			}
			converted += n
			continue
		}
		made := objs.ConvertedAt(d.File, d.Line, 0)
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
			m, err := committable(obj)
			if err != nil {
				return err
			}
			data, err := yaml.Marshal(m)
			if err != nil {
				return err
			}
			if _, err := out.Write(data); err != nil {
				return err
			}
			converted++
		}
	}
	summarize(errOut, objs, converted)
	return nil
}

// summarize says on standard error what each conversion changed, and
// what is left for the user to do.
func summarize(errOut io.Writer, objs *whatif.Objects, converted int) {
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
}

// writeConvertedList prints a List document (kubectl get -o yaml) with
// each converted item replaced by the v1 objects it became, the others
// as they are.
func writeConvertedList(out io.Writer, objs *whatif.Objects, d whatif.Document) (int, error) {
	var list map[string]any
	if err := yaml.Unmarshal(d.Body, &list); err != nil {
		return 0, err
	}
	items, _ := list["items"].([]any)
	converted := 0
	kept := make([]any, 0, len(items))
	for i, item := range items {
		made := objs.ConvertedAt(d.File, d.Line, i+1)
		if made == nil {
			kept = append(kept, item)
			continue
		}
		for _, obj := range made {
			m, err := committable(obj)
			if err != nil {
				return 0, err
			}
			kept = append(kept, m)
			converted++
		}
	}
	list["items"] = kept
	data, err := yaml.Marshal(list)
	if err != nil {
		return 0, err
	}
	_, err = out.Write(data)
	return converted, err
}

// committable is an object as a user commits it: without its status,
// the metadata the API server sets and the conversion's bookkeeping.
func committable(obj runtime.Object) (map[string]any, error) {
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
			for _, k := range []string{"kubectl.kubernetes.io/last-applied-configuration", convert.StoredVersionMigrated, convert.NodeClassRefAnnotation} {
				delete(ann, k)
			}
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return m, nil
}
