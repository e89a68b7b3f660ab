package nodeclass_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

func TestConditions(t *testing.T) {
	nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
	complete := nodeclass.Resolution{
		Subnets: []nodeclass.Subnet{{}}, SecurityGroups: []awsv1.SecurityGroup{{}}, AMIs: []awsv1.AMI{{}}, InstanceProfile: "p",
	}
	for _, tc := range []struct {
		name    string
		change  func(*nodeclass.Resolution)
		notTrue map[string]string // condition type → reason
	}{
		{"everything resolved", func(*nodeclass.Resolution) {}, map[string]string{}},
		{"no AMI", func(r *nodeclass.Resolution) { r.AMIs = nil }, map[string]string{awsv1.ConditionAMIsReady: awsv1.ReasonAMIsNotFound}},
		{"API error", func(r *nodeclass.Resolution) { r.SubnetsErr = errors.New("throttled") }, map[string]string{awsv1.ConditionSubnetsReady: awsv1.ReasonResolutionFailed}},
		{"no profile", func(r *nodeclass.Resolution) { r.ProfileErr = errors.New("role x does not exist") }, map[string]string{awsv1.ConditionInstanceProfileReady: awsv1.ReasonInstanceProfileNotReady}},
		{"user data error", func(r *nodeclass.Resolution) {
			r.Findings = []userdata.Finding{{Code: "c", Severity: userdata.Error, Message: "m"}}
		}, map[string]string{awsv1.ConditionValidationSucceeded: awsv1.ReasonUserDataInvalid}},
		{"user data warning only", func(r *nodeclass.Resolution) {
			r.Findings = []userdata.Finding{{Code: "c", Severity: userdata.Warning, Message: "m"}}
		}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := complete
			tc.change(&r)
			got := map[string]string{}
			for _, c := range nodeclass.Conditions(nc, r) {
				if c.Status != metav1.ConditionTrue && c.Type != awsv1.ConditionReady {
					got[c.Type] = c.Reason
				}
				if c.Type == awsv1.ConditionReady && (c.Status == metav1.ConditionTrue) != (len(tc.notTrue) == 0) {
					t.Errorf("Ready=%s with %v not true", c.Status, tc.notTrue)
				}
			}
			if len(got) != len(tc.notTrue) {
				t.Fatalf("conditions not true: %v, want %v", got, tc.notTrue)
			}
			for k, v := range tc.notTrue {
				if got[k] != v {
					t.Errorf("%s reason %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// A placementGroup that names no available group keeps the
// EC2NodeClass from Ready with a condition that names the selector and
// the fix; once resolved, the condition names the group and its strategy.
func TestPlacementGroupCondition(t *testing.T) {
	nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("training")}
	r := nodeclass.Resolution{Subnets: []nodeclass.Subnet{{}}, SecurityGroups: []awsv1.SecurityGroup{{}}, AMIs: []awsv1.AMI{{}}, InstanceProfile: "p"}
	conds := nodeclass.Conditions(nc, r)
	pg, ready := meta.FindStatusCondition(conds, awsv1.ConditionPlacementGroupReady), meta.FindStatusCondition(conds, awsv1.ConditionReady)
	if pg == nil || pg.Status != metav1.ConditionFalse || pg.Reason != awsv1.ReasonPlacementGroupNotFound ||
		!strings.Contains(pg.Message, "name training") || !strings.Contains(pg.Message, "create-placement-group") || ready.Status != metav1.ConditionFalse {
		t.Errorf("unresolved placement group: %+v, Ready %s; want PlacementGroupNotFound naming the selector and the fix, not Ready", pg, ready.Status)
	}
	r.PlacementGroup = &awsv1.PlacementGroup{ID: "pg-0123", Name: "training", Strategy: "partition", PartitionCount: 4}
	conds = nodeclass.Conditions(nc, r)
	pg, ready = meta.FindStatusCondition(conds, awsv1.ConditionPlacementGroupReady), meta.FindStatusCondition(conds, awsv1.ConditionReady)
	if pg.Status != metav1.ConditionTrue || !strings.Contains(pg.Message, "pg-0123") || !strings.Contains(pg.Message, "4 partitions") || ready.Status != metav1.ConditionTrue {
		t.Errorf("resolved placement group: %+v, Ready %s", pg, ready.Status)
	}
}

// PricesCurrent says where prices come from, since when and why, and what
// to grant; it is False but never part of Ready while prices are not the
// APIs'.
func TestPricesCondition(t *testing.T) {
	at := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	denied := errors.New("reading on-demand prices: AccessDeniedException")
	api := instancetypes.PriceState{Source: instancetypes.PricesFromAPI, Since: at, Answered: at}
	for _, tc := range []struct {
		name   string
		st     instancetypes.PriceStatus
		status metav1.ConditionStatus
		reason string
		says   []string
	}{
		{"both APIs", instancetypes.PriceStatus{OnDemand: api, Spot: api}, metav1.ConditionTrue, awsv1.ReasonPricingAPI, []string{"Pricing API since 2026-11-25T06:00:00Z"}},
		{"built-in", instancetypes.PriceStatus{OnDemand: instancetypes.PriceState{Source: instancetypes.PricesBuiltIn, Since: at, Err: denied, Published: "2026-07-06", TableRegion: "us-east-1"}, Spot: api},
			metav1.ConditionFalse, awsv1.ReasonBuiltInPrices, []string{"built-in table of us-east-1 published 2026-07-06", "since 2026-11-25T06:00:00Z", "AccessDeniedException", "grant pricing:GetProducts", "nodes still launch"}},
		{"last known", instancetypes.PriceStatus{OnDemand: instancetypes.PriceState{Source: instancetypes.PricesLastKnown, Since: at.Add(time.Hour), Answered: at, Err: denied}, Spot: api},
			metav1.ConditionFalse, awsv1.ReasonLastKnownPrices, []string{"answered at 2026-11-25T06:00:00Z", "since 2026-11-25T07:00:00Z"}},
		{"spot history denied", instancetypes.PriceStatus{OnDemand: api, Spot: instancetypes.PriceState{Source: instancetypes.PricesBuiltIn, Since: at, Err: errors.New("UnauthorizedOperation")}},
			metav1.ConditionFalse, awsv1.ReasonBuiltInPrices, []string{"spot offerings are priced as on-demand", "UnauthorizedOperation", "ec2:DescribeSpotPriceHistory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := nodeclass.PricesCondition(tc.st)
			if c.Type != awsv1.ConditionPricesCurrent || c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("%s %s %s", c.Type, c.Status, c.Reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q does not say %q", c.Message, s)
				}
			}
			st := tc.st
			conds := nodeclass.Conditions(&awsv1.EC2NodeClass{}, nodeclass.Resolution{Prices: &st})
			for _, cond := range conds {
				if cond.Type == awsv1.ConditionReady && strings.Contains(cond.Message, awsv1.ConditionPricesCurrent) {
					t.Errorf("Ready counts PricesCurrent: %s", cond.Message)
				}
			}
		})
	}
}

// spec.kubelet the kubelet would refuse, or with fields the AMI family
// would not apply, keeps the EC2NodeClass from Ready with the reason and
// a message naming the fields; AL2023 applies any kubelet field.
func TestKubeletConditions(t *testing.T) {
	complete := nodeclass.Resolution{
		Subnets: []nodeclass.Subnet{{}}, SecurityGroups: []awsv1.SecurityGroup{{}}, AMIs: []awsv1.AMI{{}}, InstanceProfile: "p",
	}
	for _, tc := range []struct {
		name, alias, kubelet, reason, message string
	}{
		{"AL2023 applies any field", "al2023@latest", `{serializeImagePulls: false, maxPods: 20}`, "", ""},
		{"AL2 drops an unmanaged field", "al2@latest", `{serializeImagePulls: false, maxPods: 20}`, awsv1.ReasonUnsupportedKubeletConfiguration,
			"spec.kubelet has fields not applied by the AL2 AMI family that would be silently dropped: serializeImagePulls"},
		{"Bottlerocket has no podsPerCore", "bottlerocket@latest", `{podsPerCore: 2}`, awsv1.ReasonUnsupportedKubeletConfiguration, "dropped: podsPerCore"},
		{"a field the kubelet lacks", "al2023@latest", `{notAKubeletField: true}`, awsv1.ReasonInvalidKubeletConfiguration,
			`the kubelet would refuse spec.kubelet, so nothing is launched from this EC2NodeClass: spec.kubelet: unknown field "notAKubeletField"`},
		{"invalid before unsupported", "al2@latest", `{serializeImagePulls: false, maxPods: -1}`, awsv1.ReasonInvalidKubeletConfiguration, "spec.kubelet.maxPods: -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := nodeClass(awsv1.AMISelectorTerm{Alias: tc.alias})
			if err := yaml.Unmarshal([]byte(tc.kubelet), &nc.Spec.Kubelet); err != nil {
				t.Fatal(err)
			}
			conds := nodeclass.Conditions(nc, complete)
			validation, ready := meta.FindStatusCondition(conds, awsv1.ConditionValidationSucceeded), meta.FindStatusCondition(conds, awsv1.ConditionReady)
			if tc.reason == "" {
				if validation.Status != metav1.ConditionTrue || ready.Status != metav1.ConditionTrue {
					t.Errorf("ValidationSucceeded %s %s: %s; Ready %s", validation.Status, validation.Reason, validation.Message, ready.Status)
				}
				return
			}
			if validation.Status != metav1.ConditionFalse || validation.Reason != tc.reason || !strings.Contains(validation.Message, tc.message) || ready.Status != metav1.ConditionFalse {
				t.Errorf("ValidationSucceeded %s %s: %q; want False %s containing %q, and Ready False (Ready %s)", validation.Status, validation.Reason, validation.Message, tc.reason, tc.message, ready.Status)
			}
		})
	}
}

// CEL expressions in spec.kubelet need the NodeClassCEL gate; with it, an
// expression that does not compile, or fails for some instance type,
// keeps the EC2NodeClass from Ready, naming the field.
func TestKubeletExpressionConditions(t *testing.T) {
	complete := nodeclass.Resolution{
		Subnets: []nodeclass.Subnet{{}}, SecurityGroups: []awsv1.SecurityGroup{{}}, AMIs: []awsv1.AMI{{}}, InstanceProfile: "p",
	}
	for _, tc := range []struct {
		name, kubelet   string
		gate            bool
		reason, message string
	}{
		{"gate off", `{maxPods: "vcpus * 8"}`, false, awsv1.ReasonKubeletExpressionsDisabled,
			"spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled; start the controller with --aws-feature-gates NodeClassCEL=true"},
		{"gate off, not even compiling", `{maxPods: "vcpus *"}`, false, awsv1.ReasonKubeletExpressionsDisabled, "NodeClassCEL"},
		{"gate on", `{maxPods: "vcpus * 8", kubeReserved: {cpu: "max(60, vcpus * 30)"}}`, true, "", ""},
		{"does not compile", `{kubeReserved: {memory: "11 * pods"}}`, true, awsv1.ReasonKubeletExpressionInvalid, `spec.kubelet.kubeReserved[memory]: the expression "11 * pods"`},
		{"fails for small types", `{maxPods: "vcpus - 3"}`, true, awsv1.ReasonKubeletExpressionEvaluationFailed,
			"an expression must give a usable value for every instance type"},
		{"invalid comes first", `{maxPods: "vcpus * 8", podsPerCore: -1}`, false, awsv1.ReasonInvalidKubeletConfiguration, "spec.kubelet.podsPerCore: -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
			if err := yaml.Unmarshal([]byte(tc.kubelet), &nc.Spec.Kubelet); err != nil {
				t.Fatal(err)
			}
			r := complete
			r.KubeletExpressions = tc.gate
			validation := meta.FindStatusCondition(nodeclass.Conditions(nc, r), awsv1.ConditionValidationSucceeded)
			if tc.reason == "" {
				if validation.Status != metav1.ConditionTrue {
					t.Errorf("ValidationSucceeded %s %s: %s", validation.Status, validation.Reason, validation.Message)
				}
				return
			}
			if validation.Status != metav1.ConditionFalse || validation.Reason != tc.reason || !strings.Contains(validation.Message, tc.message) {
				t.Errorf("ValidationSucceeded %s %s: %q; want False %s containing %q", validation.Status, validation.Reason, validation.Message, tc.reason, tc.message)
			}
		})
	}
}

// Expressions must hold for the account's instance types: an expression
// that fails for small types the embedded catalog has is fine in an
// account that offers only large ones.
func TestKubeletExpressionsHoldForTheAccountsTypes(t *testing.T) {
	nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
	if err := yaml.Unmarshal([]byte(`{maxPods: "vcpus - 3"}`), &nc.Spec.Kubelet); err != nil {
		t.Fatal(err)
	}
	r := nodeclass.Resolution{
		Subnets: []nodeclass.Subnet{{}}, SecurityGroups: []awsv1.SecurityGroup{{}}, AMIs: []awsv1.AMI{{}}, InstanceProfile: "p", KubeletExpressions: true,
	}
	if v := meta.FindStatusCondition(nodeclass.Conditions(nc, r), awsv1.ConditionValidationSucceeded); v.Reason != awsv1.ReasonKubeletExpressionEvaluationFailed {
		t.Errorf("against the embedded catalog: %s %s", v.Reason, v.Message)
	}
	r.Specs = []instancetypes.Spec{{Name: "m5.2xlarge", VCPU: 8, MemoryMiB: 32768, MaxENIs: 4, IPv4PerENI: 15}}
	if v := meta.FindStatusCondition(nodeclass.Conditions(nc, r), awsv1.ConditionValidationSucceeded); v.Status != metav1.ConditionTrue {
		t.Errorf("against an account of 8-vCPU types: %s %s: %s", v.Status, v.Reason, v.Message)
	}
}
