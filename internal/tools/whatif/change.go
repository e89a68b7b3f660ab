package whatif

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
)

// Change is the NodePools and EC2NodeClasses a user means to apply: each
// replaces the object of its name, or is added.
type Change struct {
	NodePools      []*v1.NodePool
	EC2NodeClasses []*awsv1.EC2NodeClass
}

// LoadChange reads a change from manifests (name labels errors): only
// NodePools and EC2NodeClasses; anything else is an error naming it.
func (c *Change) LoadChange(name string, r io.Reader) error {
	o := &Objects{}
	if err := o.Load(name, r); err != nil {
		return err
	}
	var others []string
	for _, s := range o.Skipped {
		others = append(others, s.Kind+" "+s.Name)
	}
	for kind, n := range map[string]int{"Pod or workload": len(o.Pods), "Node": len(o.Nodes), "NodeClaim": len(o.NodeClaims), "DaemonSet": len(o.DaemonSets),
		"PodDisruptionBudget": len(o.PDBs), "NodeOverlay": len(o.Overlays), "Namespace": len(o.Namespaces), "volume": len(o.PVCs) + len(o.PVs) + len(o.StorageClasses) + len(o.CSINodes)} {
		if n > 0 {
			others = append(others, fmt.Sprintf("%d %s", n, kind))
		}
	}
	if o.AWSAuth != nil {
		others = append(others, "ConfigMap aws-auth")
	}
	if len(others) > 0 {
		slices.Sort(others)
		return fmt.Errorf("%s: a change holds NodePools and EC2NodeClasses only; it also holds %s (put the cluster's objects in -f)", name, strings.Join(others, ", "))
	}
	c.NodePools = append(c.NodePools, o.NodePools...)
	c.EC2NodeClasses = append(c.EC2NodeClasses, o.EC2NodeClasses...)
	return nil
}

// ChangedObject is an object a change replaces or adds, and the fields
// that differ.
type ChangedObject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// New: the cluster has no object of this name.
	New    bool     `json:"new,omitempty"`
	Fields []string `json:"fields"`
	// Unresolved are the changed fields whose effect only the account
	// knows offline (subnets or security groups selected by tags).
	Unresolved []string `json:"unresolved,omitempty"`
}

// Applied are the objects with the change made, as Plan plans them.
func (c *Change) Applied(o *Objects) *Objects {
	out, _, _ := c.apply(o)
	return out
}

// apply returns the objects with the change made (the input is left as
// it is), and what it changed. A changed EC2NodeClass without a status
// keeps the cluster's, less what its changed selector terms make unknown.

func (c *Change) apply(o *Objects) (*Objects, []ChangedObject, []string) {
	out := *o
	out.NodePools = slices.Clone(o.NodePools)
	out.EC2NodeClasses = slices.Clone(o.EC2NodeClasses)
	var changed []ChangedObject
	var warnings []string
	for _, np := range c.NodePools {
		i := slices.IndexFunc(out.NodePools, func(x *v1.NodePool) bool { return x.Name == np.Name })
		if i < 0 {
			out.NodePools = append(out.NodePools, np)
			changed = append(changed, ChangedObject{Kind: "NodePool", Name: np.Name, New: true, Fields: []string{}})
			continue
		}
		np = np.DeepCopy()
		np.UID, np.CreationTimestamp = out.NodePools[i].UID, out.NodePools[i].CreationTimestamp
		changed = append(changed, ChangedObject{Kind: "NodePool", Name: np.Name, Fields: fieldsChanged("spec", out.NodePools[i].Spec, np.Spec)})
		out.NodePools[i] = np
	}
	for _, nc := range c.EC2NodeClasses {
		i := slices.IndexFunc(out.EC2NodeClasses, func(x *awsv1.EC2NodeClass) bool { return x.Name == nc.Name })
		if i < 0 {
			out.EC2NodeClasses = append(out.EC2NodeClasses, nc)
			changed = append(changed, ChangedObject{Kind: "EC2NodeClass", Name: nc.Name, New: true, Fields: []string{}})
			continue
		}
		old := out.EC2NodeClasses[i]
		nc = nc.DeepCopy()
		fields := fieldsChanged("spec", old.Spec, nc.Spec)
		var unresolved []string
		if reflect.DeepEqual(nc.Status, awsv1.EC2NodeClassStatus{}) {
			var warn string
			nc.Status, warn, unresolved = statusAfter(old, nc, fields)
			if warn != "" {
				warnings = append(warnings, warn)
			}
		}
		changed = append(changed, ChangedObject{Kind: "EC2NodeClass", Name: nc.Name, Fields: fields, Unresolved: unresolved})
		out.EC2NodeClasses[i] = nc
	}
	return &out, changed, warnings
}

// UnresolvedAMI stands for the AMIs changed amiSelectorTerms select, when
// they are not known offline: nodes running any other AMI drift.
const UnresolvedAMI = "(what the new amiSelectorTerms select)"

// statusAfter is a changed EC2NodeClass's status offline: the cluster's,
// with the AMIs the new amiSelectorTerms select by ID, or a stand-in for
// AMIs only the account can resolve (an alias or tags select them).
// Changed subnet or security group terms are kept as they were, with a
// warning.
func statusAfter(old, changed *awsv1.EC2NodeClass, fields []string) (awsv1.EC2NodeClassStatus, string, []string) {
	st := *old.Status.DeepCopy()
	var warnings []string
	if slices.Contains(fields, "spec.amiSelectorTerms") && !aliasPinnedToWhatRuns(old, changed) {
		archs := map[string][]awsv1.AMI{}
		for _, a := range old.Status.AMIs {
			archs[archOf(a)] = append(archs[archOf(a)], a)
		}
		st.AMIs = nil
		// The new terms' architectures where they name them (an alias, an
		// AMI name), else those the nodes run.
		wanted := slices.Sorted(maps.Keys(archs))
		if known := nodeclass.ArchitecturesOf(&awsv1.EC2NodeClass{Spec: changed.Spec}); known.Known {
			wanted = known.Archs
		}
		for _, arch := range wanted {
			reqs := []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
			if len(archs[arch]) > 0 {
				reqs = archs[arch][0].Requirements
			}
			ids := termIDs(changed.Spec.AMISelectorTerms)
			if len(ids) == 0 {
				ids = []string{unresolvedAMI(changed.Spec.AMISelectorTerms)}
			}
			for _, id := range ids {
				st.AMIs = append(st.AMIs, awsv1.AMI{ID: id, Name: id, Requirements: reqs})
			}
		}
		if len(termIDs(changed.Spec.AMISelectorTerms)) == 0 {
			warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: spec.amiSelectorTerms changed and select AMIs by alias, name or tags, which only the account resolves; "+
				"planned as if they select AMIs other than those the nodes run (give the change a status.amis, or --cloud, to know)", changed.Name))
		}
	}
	if slices.Contains(fields, "spec.subnetSelectorTerms") {
		if subnets, ok := subnetsByID(old.Status.Subnets, changed.Spec.SubnetSelectorTerms); ok {
			st.Subnets = subnets
			fields = slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return f == "spec.subnetSelectorTerms" })
		}
	}
	var unresolved []string
	for _, f := range []string{"spec.subnetSelectorTerms", "spec.securityGroupSelectorTerms"} {
		if slices.Contains(fields, f) {
			unresolved = append(unresolved, f)
			warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: %s changed; offline the subnets and security groups they select are not known, so the nodes' network is planned as it is (--cloud resolves them)", changed.Name, f))
		}
	}
	return st, strings.Join(warnings, "; "), unresolved
}

// eksAMIPrefixes are the name prefixes of the EKS-optimized AMIs of each
// alias family.
var eksAMIPrefixes = map[string][]string{
	"al2023":       {"amazon-eks-node-al2023-"},
	"al2":          {"amazon-eks-node-", "amazon-eks-arm64-node-", "amazon-eks-gpu-node-"},
	"bottlerocket": {"bottlerocket-aws-k8s-"},
}

// aliasPinnedToWhatRuns reports whether changed amiSelectorTerms are one
// alias pinned to the version of the EKS-optimized AMIs the class selects
// now (status.amis: amazon-eks-node-al2023-x86_64-standard-1.31-v20251110
// for al2023@v20251110): they select the same AMIs, and no node drifts
// for them.
func aliasPinnedToWhatRuns(old, changed *awsv1.EC2NodeClass) bool {
	terms := changed.Spec.AMISelectorTerms
	if len(terms) != 1 || terms[0].Alias == "" || len(old.Status.AMIs) == 0 || awsv1.FamilyOf(old) != awsv1.FamilyOf(changed) {
		return false
	}
	family, version, _ := strings.Cut(terms[0].Alias, "@")
	prefixes, ok := eksAMIPrefixes[strings.ToLower(family)]
	if !ok || version == "" || version == "latest" {
		return false
	}
	v := "v" + strings.TrimPrefix(version, "v")
	for _, a := range old.Status.AMIs {
		ofFamily := slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(a.Name, p) })
		if !ofFamily || !strings.HasSuffix(a.Name, "-"+v) && !strings.Contains(a.Name, "-"+v+"-") {
			return false
		}
	}
	return true
}

// subnetsByID are the subnets of status that subnet selector terms
// naming subnets by ID select, when every ID is among them (what else
// the terms would select only the account knows).
func subnetsByID(status []awsv1.Subnet, terms []awsv1.SubnetSelectorTerm) ([]awsv1.Subnet, bool) {
	var out []awsv1.Subnet
	for _, t := range terms {
		i := slices.IndexFunc(status, func(s awsv1.Subnet) bool { return s.ID == t.ID })
		if t.ID == "" || len(t.Tags) > 0 || i < 0 {
			return nil, false
		}
		out = append(out, status[i])
	}
	return out, len(out) > 0
}

// unresolvedAMI stands for the AMIs terms select offline: those of its
// alias, when one alias is all it names.
func unresolvedAMI(terms []awsv1.AMISelectorTerm) string {
	if len(terms) == 1 && terms[0].Alias != "" {
		return "(the AMIs alias " + terms[0].Alias + " resolves to)"
	}
	return UnresolvedAMI
}

func termIDs(terms []awsv1.AMISelectorTerm) []string {
	var ids []string
	for _, t := range terms {
		if t.ID == "" {
			return nil
		}
		ids = append(ids, t.ID)
	}
	return ids
}

func archOf(a awsv1.AMI) string {
	for _, r := range a.Requirements {
		if r.Key == "kubernetes.io/arch" {
			return strings.Join(r.Values, ",")
		}
	}
	return ""
}

// fieldsChanged are the paths of the fields that differ between two
// values, as far down as both are objects (spec.template.spec.requirements,
// spec.amiSelectorTerms, ...).
func fieldsChanged(path string, before, after any) []string {
	var a, b any
	for _, x := range []struct {
		in  any
		out *any
	}{{before, &a}, {after, &b}} {
		raw, err := json.Marshal(x.in)
		if err != nil {
			return []string{path}
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return []string{path}
		}
	}
	out := []string{}
	diffPaths(path, a, b, &out)
	return out
}

func diffPaths(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
		return
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		diffPaths(path+"."+k, am[k], bm[k], out)
	}
}
