package doctor

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
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
	"github.com/nodewright/nodewright/internal/spelling"
	"github.com/nodewright/nodewright/internal/tools/whatif"
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
	// FromCluster: the objects are a cluster's, not manifests, so what
	// is missing from them does not exist.
	FromCluster bool
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
	// PodIdentities are the cluster's Pod Identity associations; nil
	// when not read.
	PodIdentities PodIdentities
	Console       sdk.Console
	ClusterName   string
	AccountID     string
	// Partition is the account's partition (aws, aws-cn, aws-us-gov):
	// IAM ARNs are written in it.
	Partition string
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

// PartitionOfARN is the partition of an ARN, empty when it is none.
func PartitionOfARN(arn string) string {
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 && parts[0] == "arn" {
		return parts[1]
	}
	return ""
}

// PartitionOfRegion is the partition of a region: aws-cn for cn-*,
// aws-us-gov for us-gov-*, aws otherwise; empty for no region.
func PartitionOfRegion(region string) string {
	switch {
	case region == "":
		return ""
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
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
	located := in.Objects
	in.Objects = filledTemplates(r, in)
	if in.Cloud != nil && in.Cloud.Unavailable != nil {
		r.add(checkFailed("Cluster/"+in.clusterName(), "the EKS cluster (the AMI aliases' Kubernetes version and the account)", "eks:DescribeCluster", in.Cloud.Unavailable))
	}
	// Rules about the input itself: what they find is about the objects,
	// and every one runs whatever the others find.
	conversionRule(r, in.Objects)
	amiTermRule(r, in.Objects)
	userDataRules(r, in.Objects)
	kubeletRule(r, in.Objects)
	userDataSizeRule(r, in.Objects)
	nodeClassRefRule(r, in)
	startupTaintRule(r, in.Objects)
	windowsIPAMRule(r, in)
	// A rule that cannot finish (an AWS call refused, say) is a finding
	// of its own; every other rule still reports.
	for _, rule := range []struct {
		what, grant string
		run         func() error
	}{
		{"whether the node roles may join the cluster", "iam:GetInstanceProfile and eks:DescribeAccessEntry", func() error { return nodeRoleRule(ctx, r, in) }},
		{"whether a node role is the controller's", "eks:ListPodIdentityAssociations and eks:DescribePodIdentityAssociation", func() error { return identityRule(ctx, r, in) }},
		{"the AMIs' architectures", "ec2:DescribeImages and ssm:GetParameter", func() error { return amiArchitectureRule(ctx, r, in) }},
		{"whether pods fit the NodePools", "ec2:DescribeImages, ec2:DescribeSubnets and ssm:GetParameter", func() error { return podRule(r, in) }},
		{"the nodes' taints and resources", "", func() error { return clusterStateRules(r, in) }},
		{"the NodePools' requirement keys", "", func() error { return requirementLabelRule(r, in.Objects) }},
		{"why registrations time out", "ec2:GetConsoleOutput", func() error { return registrationTimeoutRule(ctx, r, in) }},
	} {
		if err := rule.run(); err != nil {
			if rule.grant == "" || in.Cloud == nil {
				// No AWS call failed: the input kept the rule from
				// running, and says so.
				r.add(Finding{Code: CodeNotChecked, Severity: Warning, Object: "Cluster/" + in.clusterName(),
					Message:  "could not check " + rule.what + ": " + err.Error(),
					Evidence: "the other checks ran",
					Fix:      "correct what the message names in the input and run nodewright doctor again"})
				continue
			}
			r.add(checkFailed("Cluster/"+in.clusterName(), rule.what, rule.grant, err))
		}
	}
	disruptionRules(r, in)
	pricesRule(r, in)
	locate(r, located)
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
	userdata.CodeUserCallsBootstrap: true, userdata.CodeBottlerocketTaints: true, userdata.CodeWindowsUserCallsBootstrap: true,
}

// userDataRules run the controller's user data validation on every
// EC2NodeClass.
func userDataRules(r *Report, o *whatif.Objects) {
	for _, nc := range o.EC2NodeClasses {
		ud := ""
		if nc.Spec.UserData != nil {
			ud = *nc.Spec.UserData
		}
		for _, f := range nodeclass.UserDataFindings(nc) {
			if f.Code == userdata.CodeTooLarge && sizeRuleReports(o, nc.Name) {
				continue // the size rule's finding names the NodePool
			}
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
	tokens := []string{"register-with-taints", "registerWithTaints", "bootstrap.sh", "node-taints", "[settings.kubernetes", "Start-EKSBootstrap", "powershell>", "<persist>"}
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

func classesByName(o *whatif.Objects) map[string]*awsv1.EC2NodeClass {
	out := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range o.EC2NodeClasses {
		out[nc.Name] = nc
	}
	return out
}

// nodeClassRefRule reports NodePools whose nodeClassRef names an
// EC2NodeClass that does not exist, with the nearest existing name: such
// a NodePool launches nothing. In manifests that hold no EC2NodeClass at
// all, it is only not checked.
func nodeClassRefRule(r *Report, in Input) {
	classes := classesByName(in.Objects)
	names := slices.Sorted(maps.Keys(classes))
	for _, np := range in.Objects.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || classes[ref.Name] != nil {
			continue
		}
		obj := "NodePool/" + np.Name
		if len(classes) == 0 && !in.FromCluster {
			r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: obj,
				Message:  fmt.Sprintf("NodePool %s's EC2NodeClass %s is not among the inputs, so nothing about the nodes it launches (user data, AMIs, role) is checked", np.Name, ref.Name),
				Evidence: fmt.Sprintf("spec.template.spec.nodeClassRef.name: %s; no EC2NodeClass among the inputs", ref.Name),
				Fix:      fmt.Sprintf("add EC2NodeClass %s with -f (kubectl get ec2nodeclass %s -o yaml), or run nodewright doctor against the cluster", ref.Name, ref.Name)})
			continue
		}
		fix := fmt.Sprintf("create EC2NodeClass %s, or set NodePool %s's spec.template.spec.nodeClassRef.name to one that exists (%s)", ref.Name, np.Name, strings.Join(names, ", "))
		if near := nearest(ref.Name, names); near != "" {
			fix = fmt.Sprintf("set NodePool %s's spec.template.spec.nodeClassRef.name to %s (did you mean %s?), or create EC2NodeClass %s", np.Name, near, near, ref.Name)
		}
		if len(names) == 0 {
			fix = fmt.Sprintf("create EC2NodeClass %s (karpenter.k8s.aws/v1)", ref.Name)
		}
		r.add(Finding{Code: CodeNodeClassNotFound, Severity: Error, Object: obj,
			Message:  fmt.Sprintf("NodePool %s's nodeClassRef names EC2NodeClass %s, which does not exist, so the NodePool launches nothing and its pods stay pending", np.Name, ref.Name),
			Evidence: fmt.Sprintf("spec.template.spec.nodeClassRef.name: %s; EC2NodeClasses: %s", ref.Name, cmp.Or(strings.Join(names, ", "), "none")),
			Fix:      fix})
	}
}

// nearest is the name closest to a misspelt one (at most a third of it
// changed), or "".
func nearest(name string, names []string) string {
	best, bestDist := "", len(name)/3+1
	for _, n := range names {
		if d := spelling.Distance(strings.ToLower(name), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}
