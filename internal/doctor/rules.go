package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/whatif"
)

// DefaultGrace is how long a node may keep a taint that another component
// removes (or miss a resource its device plugin registers) before doctor
// reports it.
const DefaultGrace = time.Minute

// Input is what the rules read: manifests or a cluster's objects and,
// when an AWS account is at hand, its facts.
type Input struct {
	Objects *whatif.Objects
	// Events are a cluster's recent warning events; none offline.
	Events []corev1.Event
	// Cloud is the AWS account; nil offline.
	Cloud *Cloud
	// Now is when the state was read; the rules measure how long taints
	// have stayed from it.
	Now time.Time
	// Grace is how long a node may keep a taint another component
	// removes; DefaultGrace when zero.
	Grace time.Duration
}

// InstanceProfiles is the part of IAM doctor reads.
type InstanceProfiles interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, opts ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
}

// Cloud is an AWS account's APIs, real or simulated.
type Cloud struct {
	// Resolver resolves AMIs and subnets.
	Resolver         *nodeclass.Resolver
	InstanceProfiles InstanceProfiles
	AccessEntries    sdk.AccessEntries
	Console          sdk.Console
	ClusterName      string
	AccountID        string
	// Unavailable says why the cluster could not be described; the checks
	// that need it are skipped and it is a finding.
	Unavailable error
}

// AccountOfARN is the account of an ARN (arn:PARTITION:SERVICE:REGION:ACCOUNT:...),
// empty when it has none.
func AccountOfARN(arn string) string {
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 && parts[0] == "arn" {
		return parts[4]
	}
	return ""
}

// Diagnose runs every rule.
func Diagnose(ctx context.Context, in Input) (*Report, error) {
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	if in.Grace == 0 {
		in.Grace = DefaultGrace
	}
	r := &Report{}
	if in.Cloud != nil && in.Cloud.Unavailable != nil {
		r.add(checkFailed("Cluster/"+in.clusterName(), "the EKS cluster (the AMI aliases' Kubernetes version and the account)", "eks:DescribeCluster", in.Cloud.Unavailable))
	}
	userDataRules(r, in.Objects)
	startupTaintRule(r, in.Objects)
	// A rule that cannot finish (an AWS call refused, say) is a finding
	// of its own; every other rule still reports.
	for _, rule := range []struct {
		what, grant string
		run         func() error
	}{
		{"whether the node roles may join the cluster", "iam:GetInstanceProfile and eks:DescribeAccessEntry", func() error { return nodeRoleRule(ctx, r, in) }},
		{"the AMIs' architectures", "ec2:DescribeImages and ssm:GetParameter", func() error { return amiArchitectureRule(ctx, r, in) }},
		{"whether pods fit the NodePools", "ec2:DescribeImages, ec2:DescribeSubnets and ssm:GetParameter", func() error { return podRule(r, in) }},
		{"the nodes' taints and resources", "", func() error { return clusterStateRules(r, in) }},
		{"why registrations time out", "ec2:GetConsoleOutput", func() error { return registrationTimeoutRule(ctx, r, in) }},
	} {
		if err := rule.run(); err != nil {
			if rule.grant == "" {
				return nil, err
			}
			r.add(checkFailed("Cluster/"+in.clusterName(), rule.what, rule.grant, err))
		}
	}
	disruptionRules(r, in)
	pricesRule(r, in)
	r.sort()
	return r, nil
}

func (in Input) clusterName() string {
	if in.Cloud != nil && in.Cloud.ClusterName != "" {
		return in.Cloud.ClusterName
	}
	return "cluster"
}

// checkFailed is the finding for a check an AWS call kept from finishing.
func checkFailed(object, what, grant string, err error) Finding {
	return Finding{Code: CodeCheckFailed, Severity: Warning, Object: object,
		Message:  "could not check " + what + ": " + err.Error(),
		Evidence: "the other checks ran",
		Fix:      "add " + grant + " to the IAM role nodewright doctor runs as (docs/iam-policy-doctor.json has them), or give it a network path to the AWS endpoint, and run nodewright doctor again"}
}

// pricesRule reports EC2NodeClasses whose launches are priced without the
// Pricing API or the spot price history (PricesCurrent=False): nodes still
// launch, but perhaps not the cheapest by today's prices.
func pricesRule(r *Report, in Input) {
	for _, nc := range in.Objects.EC2NodeClasses {
		c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionPricesCurrent)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		r.add(Finding{Code: CodeStalePrices, Severity: Warning, Object: "EC2NodeClass/" + nc.Name,
			Message:  fmt.Sprintf("nodes of EC2NodeClass %s are chosen by prices that are not current (%s): launches go on, but the cheapest by those prices may not be the cheapest today", nc.Name, c.Reason),
			Evidence: fmt.Sprintf("EC2NodeClass %s PricesCurrent=False %s since %s: %s", nc.Name, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message),
			Fix:      "grant the controller's role pricing:GetProducts and ec2:DescribeSpotPriceHistory (docs/iam-policy.json has both) and let it reach api.pricing.us-east-1.amazonaws.com; PricesCurrent turns True within a minute"})
	}
}

// overrideCodes are the user data findings that all mean "the node's
// registration taints are replaced".
var overrideCodes = map[string]bool{
	userdata.CodeFlagsOverrideTaints: true, userdata.CodeConfigTaintsReplaced: true,
	userdata.CodeUserCallsBootstrap: true, userdata.CodeBottlerocketTaints: true,
	userdata.CodeUnreadable: true,
}

// userDataRules run the controller's user data validation on every
// EC2NodeClass.
func userDataRules(r *Report, o *whatif.Objects) {
	for _, nc := range o.EC2NodeClasses {
		ud := ""
		if nc.Spec.UserData != nil {
			ud = *nc.Spec.UserData
		}
		for _, f := range userdata.Validate(nodeclass.Family(nc), ud) {
			code := f.Code
			if overrideCodes[code] {
				code = CodeUserDataOverridesTaints
			}
			sev := Error
			if f.Severity == userdata.Warning {
				sev = Warning
			}
			r.add(Finding{
				Code: code, Severity: sev, Object: "EC2NodeClass/" + nc.Name,
				Message: f.Message, Evidence: evidence(ud, f.Code), Fix: fmt.Sprintf("in EC2NodeClass %s's spec.userData, %s", nc.Name, f.Fix),
			})
		}
	}
}

// evidence quotes the lines of user data a finding is about.
func evidence(ud, code string) string {
	tokens := []string{"register-with-taints", "registerWithTaints", "bootstrap.sh", "node-taints", "[settings.kubernetes"}
	var lines []string
	for _, line := range strings.Split(ud, "\n") {
		for _, t := range tokens {
			if strings.Contains(line, t) {
				lines = append(lines, strings.TrimSpace(line))
				break
			}
		}
	}
	if len(lines) == 0 {
		if code == userdata.CodeCustomMissingUnregistered {
			return "spec.userData registers no taint"
		}
		return ""
	}
	return "spec.userData: " + strings.Join(lines, " | ")
}

// amiArchitectureRule finds NodePools that allow an architecture their
// EC2NodeClass has no AMI for.
func amiArchitectureRule(ctx context.Context, r *Report, in Input) error {
	classes := classesByName(in.Objects)
	for _, np := range in.Objects.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || classes[ref.Name] == nil {
			continue
		}
		nc := classes[ref.Name]
		amiArchs, source, err := archsOf(ctx, in.Cloud, nc)
		if err != nil {
			r.add(checkFailed("NodePool/"+np.Name, "the architectures of EC2NodeClass "+nc.Name+"'s AMIs", "ec2:DescribeImages and ssm:GetParameter", err))
			continue
		}
		if source == "" {
			continue
		}
		wanted := []string{"amd64", "arm64"}
		explicit := false
		for _, req := range np.Spec.Template.Spec.Requirements {
			if req.Key == corev1.LabelArchStable && req.Operator == corev1.NodeSelectorOpIn {
				wanted, explicit = req.Values, true
			}
		}
		var missing []string
		for _, a := range wanted {
			if !amiArchs[a] {
				missing = append(missing, a)
			}
		}
		// A NodePool that does not restrict the architecture only fails
		// when no architecture at all has an AMI.
		if len(missing) == 0 || (!explicit && len(missing) < len(wanted)) {
			continue
		}
		have := make([]string, 0, len(amiArchs))
		for a := range amiArchs {
			have = append(have, a)
		}
		sort.Strings(have)
		haveText := strings.Join(have, ", ")
		if haveText == "" {
			haveText = "no architecture: they select no AMI"
		}
		r.add(Finding{
			Code: CodeAMIArchitectureMismatch, Severity: Error, Object: "NodePool/" + np.Name,
			Message: fmt.Sprintf("NodePool %s allows %s, but EC2NodeClass %s has no AMI for %s (its AMIs are for %s), so those instance types are never launched and pods that need them stay pending",
				np.Name, strings.Join(wanted, ", "), nc.Name, strings.Join(missing, ", "), haveText),
			Evidence: fmt.Sprintf("EC2NodeClass %s amiSelectorTerms %s: AMIs for %s (%s)", nc.Name, nodeclass.DescribeAMITerms(nc.Spec.AMISelectorTerms), haveText, source),
			Fix: fmt.Sprintf("add an AMI for %s to EC2NodeClass %s's amiSelectorTerms (an alias such as al2023@latest covers both architectures), or point NodePool %s at an EC2NodeClass that has one, or restrict its kubernetes.io/arch requirement to %s",
				strings.Join(missing, ", "), nc.Name, np.Name, haveText),
		})
	}
	return nil
}

// archsOf returns the architectures of an EC2NodeClass's AMIs and where
// they were learnt: resolved in the account, read from the status a
// controller wrote, or known from an alias. An empty source means unknown.
func archsOf(ctx context.Context, cloud *Cloud, nc *awsv1.EC2NodeClass) (map[string]bool, string, error) {
	out := map[string]bool{}
	addReqs := func(reqs []corev1.NodeSelectorRequirement) {
		for _, req := range reqs {
			if req.Key != corev1.LabelArchStable {
				continue
			}
			for _, v := range req.Values {
				out[v] = true
			}
		}
	}
	switch {
	case cloud != nil && cloud.Resolver != nil:
		amis, err := cloud.Resolver.AMIs(ctx, nc)
		if err != nil {
			return nil, "", fmt.Errorf("resolving the AMIs of EC2NodeClass %s: %w", nc.Name, err)
		}
		for _, a := range amis {
			addReqs(a.Requirements)
		}
		return out, "resolved in the account", nil
	case len(nc.Status.AMIs) > 0:
		for _, a := range nc.Status.AMIs {
			addReqs(a.Requirements)
		}
		return out, "from status.amis", nil
	}
	for _, t := range nc.Spec.AMISelectorTerms {
		if t.Alias == "" {
			return nil, "", nil // ids, names and tags are only known to the account
		}
		out["amd64"] = true
		if !strings.HasPrefix(t.Alias, "windows") {
			out["arm64"] = true
		}
	}
	return out, "the alias's EKS-optimized AMIs", nil
}

func classesByName(o *whatif.Objects) map[string]*awsv1.EC2NodeClass {
	out := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range o.EC2NodeClasses {
		out[nc.Name] = nc
	}
	return out
}
