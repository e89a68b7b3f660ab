package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// amiArchitectureRule finds NodePools whose instance types have no AMI in
// their EC2NodeClass. The architectures a NodePool launches are those of
// the catalog's instance types its requirements admit (an instance
// family, type, category or generation implies one as surely as
// kubernetes.io/arch does); the AMIs' are the account's, the status's,
// or what an alias or name says. It is an error when none of them has an
// AMI, or when an architecture the NodePool asks for by name has none.
func amiArchitectureRule(ctx context.Context, r *Report, in Input) error {
	classes := classesByName(in.Objects)
	catalog, err := catalogTypes()
	if err != nil {
		return err
	}
	amis := map[string]amiArchs{}
	for _, np := range in.Objects.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || classes[ref.Name] == nil {
			continue
		}
		nc := classes[ref.Name]
		have, ok := amis[nc.Name]
		if !ok {
			if have, err = archsOf(ctx, in.Cloud, nc); err != nil {
				r.add(checkFailed("EC2NodeClass/"+nc.Name, "the architectures of EC2NodeClass "+nc.Name+"'s AMIs", "ec2:DescribeImages and ssm:GetParameter", err))
			}
			amis[nc.Name] = have
			reportAMIsUnknown(r, in, nc, have)
			resolvedFamilyRule(r, nc, have)
		}
		if err == nil {
			checkPoolArchs(r, in, np, nc, have, catalog)
		}
	}
	return nil
}

// amiArchs are the architectures of an EC2NodeClass's AMIs, where they
// were read, and what is not known.
type amiArchs struct {
	archs  map[string]bool
	source string
	// none says why the class selects no AMI at all (in the account);
	// fix, when set, what to change.
	none, fix string
	// unknown are the terms only the account could resolve; the archs
	// are then a lower bound.
	unknown []string
	// resolved are the images the account resolved, by id and name.
	resolved [][2]string
}

// reportAMIsUnknown reports an EC2NodeClass whose AMIs are not known (an
// id or tags in a manifest, no account) or select no image in the
// account.
func reportAMIsUnknown(r *Report, in Input, nc *awsv1.EC2NodeClass, have amiArchs) {
	switch {
	case have.none != "" && have.fix != "":
		r.add(Finding{Code: CodeAMINotFound, Severity: Error, Object: "EC2NodeClass/" + nc.Name,
			Message:  fmt.Sprintf("EC2NodeClass %s's spec.amiSelectorTerms name no AMI for this cluster (%s), so nothing is launched from it and the pods of every NodePool using it stay pending", nc.Name, have.none),
			Evidence: fmt.Sprintf("EC2NodeClass %s amiSelectorTerms %s", nc.Name, nodeclass.DescribeAMITerms(nc.Spec.AMISelectorTerms)),
			Fix:      fmt.Sprintf("in EC2NodeClass %s's spec.amiSelectorTerms, %s", nc.Name, have.fix)})
	case have.none != "":
		r.add(Finding{Code: CodeAMINotFound, Severity: Error, Object: "EC2NodeClass/" + nc.Name,
			Message:  fmt.Sprintf("EC2NodeClass %s's spec.amiSelectorTerms select no AMI in the account, so nothing is launched from it and the pods of every NodePool using it stay pending", nc.Name),
			Evidence: fmt.Sprintf("EC2NodeClass %s amiSelectorTerms %s: %s", nc.Name, nodeclass.DescribeAMITerms(nc.Spec.AMISelectorTerms), have.none),
			Fix:      fmt.Sprintf("in EC2NodeClass %s's spec.amiSelectorTerms, select an image the account has (aws ec2 describe-images --image-ids ... / --owners ...), or use an alias: - alias: %s@latest", nc.Name, aliasFamily(nc))})
	case len(have.unknown) > 0 && in.usesClass(nc.Name):
		r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: "EC2NodeClass/" + nc.Name,
			Message: fmt.Sprintf("the architecture and OS of EC2NodeClass %s's AMI %s are known only to the AWS account (the manifest has no status.amis), so whether its NodePools' instance types have an AMI, and whether it boots as its amiFamily says, are not checked; an AMI of the wrong architecture launches nothing for them, one of another OS never joins",
				nc.Name, strings.Join(have.unknown, ", ")),
			Evidence: fmt.Sprintf("EC2NodeClass %s spec.amiSelectorTerms %s, no status.amis", nc.Name, nodeclass.DescribeAMITerms(nc.Spec.AMISelectorTerms)),
			Fix:      "run nodewright doctor --cloud aws --cluster-name CLUSTER -f ... to resolve the AMIs in the account, or run nodewright doctor against the cluster (the controller writes status.amis)"})
	}
}

// usesClass reports whether a NodePool of the input uses the class.
func (in Input) usesClass(name string) bool {
	for _, np := range in.Objects.NodePools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == name {
			return true
		}
	}
	return false
}

// checkPoolArchs reports a NodePool whose instance types have no AMI.
func checkPoolArchs(r *Report, in Input, np *v1.NodePool, nc *awsv1.EC2NodeClass, have amiArchs, catalog []*scheduling.InstanceType) {
	if have.none != "" {
		return // reported on the class
	}
	admitted := admittedArchs(np, catalog)
	explicit := explicitArchs(np)
	var missing, asked []string
	for _, a := range slices.Sorted(maps.Keys(admitted)) {
		if !have.archs[a] {
			missing = append(missing, a)
			if explicit[a] {
				asked = append(asked, a)
			}
		}
	}
	// Some instance types still launch unless every architecture lacks
	// an AMI or one the NodePool names does; the pods that need the
	// others are reported by the pod rule. Unknown terms may add any.
	if len(missing) == 0 || len(have.unknown) > 0 || (len(asked) == 0 && len(missing) < len(admitted)) {
		return
	}
	haveList := slices.Sorted(maps.Keys(have.archs))
	haveText := strings.Join(haveList, ", ")
	if haveText == "" {
		haveText = "no architecture"
	}
	wanted := slices.Sorted(maps.Keys(admitted))
	r.add(Finding{
		Code: CodeAMIArchitectureMismatch, Severity: Error, Object: "NodePool/" + np.Name,
		Message: fmt.Sprintf("NodePool %s launches %s instance types (%s), but EC2NodeClass %s has no AMI for %s (its AMIs are for %s), so those instance types are never launched and pods that need them stay pending",
			np.Name, strings.Join(wanted, " and "), archExamples(admitted, missing), nc.Name, strings.Join(missing, ", "), haveText),
		Evidence: fmt.Sprintf("NodePool %s spec.template.spec.requirements %s; EC2NodeClass %s amiSelectorTerms %s: AMIs for %s (%s)",
			np.Name, describeRequirements(np), nc.Name, nodeclass.DescribeAMITerms(nc.Spec.AMISelectorTerms), haveText, have.source),
		Fix: archFix(in, np, nc, missing, haveList, admitted),
	})
}

// archFix says how to give a NodePool's instance types an AMI, with
// values: an AMI term for the missing architectures, an EC2NodeClass of
// the input that has them, and, when the NodePool also launches types of
// an architecture that has an AMI, the requirement that keeps to those.
func archFix(in Input, np *v1.NodePool, nc *awsv1.EC2NodeClass, missing, have []string, admitted map[string][]string) string {
	missingText := strings.Join(missing, " and ")
	fix := fmt.Sprintf("add an AMI for %s to EC2NodeClass %s's spec.amiSelectorTerms: %s", missingText, nc.Name, amiTermFor(nc, missing))
	for _, other := range in.Objects.EC2NodeClasses {
		if other.Name == nc.Name {
			continue
		}
		known := nodeclass.ArchitecturesOf(other)
		if known.Known && len(known.Archs) > 0 && !slices.ContainsFunc(missing, func(a string) bool { return !slices.Contains(known.Archs, a) }) {
			fix += fmt.Sprintf("; or set NodePool %s's spec.template.spec.nodeClassRef.name to %s, whose AMIs are for %s", np.Name, other.Name, strings.Join(known.Archs, ", "))
			break
		}
	}
	var keep []string
	for _, a := range have {
		if len(admitted[a]) > 0 {
			keep = append(keep, a)
		}
	}
	if len(keep) > 0 {
		fix += fmt.Sprintf("; or, to launch only %s, set NodePool %s's requirement kubernetes.io/arch In [%s]", strings.Join(keep, " and "), np.Name, strings.Join(keep, ", "))
	}
	return fix
}

// amiTermFor is an amiSelectorTerm that selects AMIs for the
// architectures: the EKS-optimized name of the same release when the
// class's status names one for another architecture, else the family's
// alias (both architectures).
func amiTermFor(nc *awsv1.EC2NodeClass, archs []string) string {
	if family := nodeclass.Family(nc); awsv1.IsWindows(family) {
		term := fmt.Sprintf("- alias: %s@latest (amd64: Windows has no arm64 AMIs)", strings.ToLower(family))
		if family == awsv1.AMIFamilyWindows2025 {
			term += ", or - alias: windows2022@latest before Kubernetes 1.35"
		}
		return term
	}
	if len(archs) == 1 {
		for _, a := range nc.Status.AMIs {
			if name := swapArch(a.Name, archs[0]); name != "" {
				return fmt.Sprintf("- name: %s (the same release for %s), or - alias: %s@latest (both architectures)", name, archs[0], aliasFamily(nc))
			}
		}
	}
	return fmt.Sprintf("- alias: %s@latest (both architectures)", aliasFamily(nc))
}

// swapArch is an AMI name that names another architecture in place of
// the one it names, or "".
func swapArch(name, arch string) string {
	// Only the published families' names are known to exist for both.
	if !strings.HasPrefix(name, "amazon-eks-") && !strings.HasPrefix(name, "bottlerocket-") {
		return ""
	}
	pairs := map[string][2]string{"arm64": {"x86_64", "arm64"}, "amd64": {"arm64", "x86_64"}}
	p, ok := pairs[arch]
	if !ok || !strings.Contains(name, p[0]) {
		if arch == "arm64" && strings.Contains(name, "bottlerocket") && strings.Contains(name, "x86_64") {
			return strings.Replace(name, "x86_64", "aarch64", 1)
		}
		return ""
	}
	if strings.Contains(name, "bottlerocket") {
		p = map[string][2]string{"arm64": {"x86_64", "aarch64"}, "amd64": {"aarch64", "x86_64"}}[arch]
	}
	return strings.Replace(name, p[0], p[1], 1)
}

// aliasFamily is the alias family of the class's AMI family.
func aliasFamily(nc *awsv1.EC2NodeClass) string {
	switch nodeclass.Family(nc) {
	case awsv1.AMIFamilyAL2:
		return "al2"
	case awsv1.AMIFamilyBottlerocket:
		return "bottlerocket"
	}
	return "al2023"
}

// admittedArchs are the architectures of the catalog's instance types a
// NodePool's requirements admit (zones aside: the catalog's are one
// region's), with the names of those types.
func admittedArchs(np *v1.NodePool, catalog []*scheduling.InstanceType) map[string][]string {
	reqs := scheduling.NodePoolFromObject(np, nil, nil, nil).Requirements
	delete(reqs, corev1.LabelTopologyZone)
	out := map[string][]string{}
	for _, it := range catalog {
		if !it.Compatible(reqs) {
			continue
		}
		if arch, ok := it.Requirements[corev1.LabelArchStable].Single(); ok {
			out[arch] = append(out[arch], it.Name)
		}
	}
	return out
}

// explicitArchs are the architectures a NodePool names in a
// kubernetes.io/arch In requirement.
func explicitArchs(np *v1.NodePool) map[string]bool {
	out := map[string]bool{}
	for _, req := range np.Spec.Template.Spec.Requirements {
		if req.Key == corev1.LabelArchStable && req.Operator == corev1.NodeSelectorOpIn {
			for _, v := range req.Values {
				out[v] = true
			}
		}
	}
	return out
}

// archExamples names a few of the admitted instance types of the missing
// architectures.
func archExamples(admitted map[string][]string, missing []string) string {
	var names []string
	total := 0
	for _, a := range missing {
		names = append(names, admitted[a]...)
		total += len(admitted[a])
	}
	sort.Strings(names)
	if len(names) > 3 {
		return fmt.Sprintf("%s and %d more of %s", strings.Join(names[:3], ", "), total-3, strings.Join(missing, ", "))
	}
	return strings.Join(names, ", ")
}

// describeRequirements prints a NodePool's requirements briefly.
func describeRequirements(np *v1.NodePool) string {
	parts := make([]string, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		parts = append(parts, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
	}
	if len(parts) == 0 {
		return "[] (none)"
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// catalogTypes are the built-in catalog's instance types, in the zones
// plans use offline: for Linux nodes, and for Windows nodes of each build.
var catalogTypes = sync.OnceValues(func() ([]*scheduling.InstanceType, error) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		return nil, err
	}
	out := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: whatif.DefaultZones})
	for _, build := range []string{awsv1.Windows2019Build, awsv1.Windows2022Build, awsv1.Windows2025Build} {
		out = append(out, instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: whatif.DefaultZones, Needs: instancetypes.Needs{Windows: true, WindowsBuild: build}})...)
	}
	return out, nil
})

// archsOf returns the architectures of an EC2NodeClass's AMIs: resolved
// in the account, else as the object says (its status, an alias, a
// name); what only the account knows is listed as unknown.
func archsOf(ctx context.Context, cloud *Cloud, nc *awsv1.EC2NodeClass) (amiArchs, error) {
	out := amiArchs{archs: map[string]bool{}}
	if cloud != nil && cloud.Resolver != nil {
		amis, err := cloud.Resolver.AMIs(ctx, nc)
		var aliasErr *nodeclass.AliasError
		if errors.As(err, &aliasErr) {
			out.none, out.fix = aliasErr.Reason, aliasErr.Fix
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("resolving the AMIs of EC2NodeClass %s: %w", nc.Name, err)
		}
		for _, a := range amis {
			out.resolved = append(out.resolved, [2]string{a.ID, a.Name})
			for _, req := range a.Requirements {
				if req.Key == corev1.LabelArchStable {
					for _, v := range req.Values {
						out.archs[v] = true
					}
				}
			}
		}
		out.source = "resolved in the account"
		if len(amis) == 0 {
			out.none = cloud.Resolver.NoAMIMessage(nc)
		}
		return out, nil
	}
	known := nodeclass.ArchitecturesOf(nc)
	for _, a := range known.Archs {
		out.archs[a] = true
	}
	out.source, out.unknown = known.Source, known.Unknown
	return out, nil
}
