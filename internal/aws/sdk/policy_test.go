package sdk_test

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/tools/doctor"
)

type statement struct {
	Sid       string
	Effect    string
	Action    stringOrList
	Resource  stringOrList
	Condition map[string]map[string]any
}

type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = []string{one}
		return nil
	}
	var list []string
	err := json.Unmarshal(b, &list)
	*s = list
	return err
}

func readPolicy(t *testing.T, path string) []statement {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   string
		Statement []statement
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if doc.Version != "2012-10-17" {
		t.Errorf("%s: Version %q, want 2012-10-17", path, doc.Version)
	}
	return doc.Statement
}

// actions are the IAM actions of an interface's methods: an SDK client
// method is named after its API operation, and the operation's action has
// the same name.
func actions(prefix string, iface reflect.Type) sets.Set[string] {
	out := sets.New[string]()
	for i := range iface.NumMethod() {
		out.Insert(prefix + ":" + iface.Method(i).Name)
	}
	return out
}

// impliedBy are actions AWS authorizes as part of another call
// (Amazon EC2 and IAM User Guides): an instant EC2 Fleet launches with
// ec2:RunInstances; tags given at creation need ec2:CreateTags or
// iam:TagInstanceProfile.
var impliedBy = map[string][]string{
	"ec2:CreateFleet":           {"ec2:RunInstances", "ec2:CreateTags"},
	"ec2:CreateLaunchTemplate":  {"ec2:CreateTags"},
	"iam:CreateInstanceProfile": {"iam:TagInstanceProfile"},
}

func withImplied(s sets.Set[string]) sets.Set[string] {
	out := s.Clone()
	for a := range s {
		out.Insert(impliedBy[a]...)
	}
	return out
}

func allowed(t *testing.T, stmts []statement) sets.Set[string] {
	t.Helper()
	out := sets.New[string]()
	sids := sets.New[string]()
	for _, s := range stmts {
		if s.Effect != "Allow" || s.Sid == "" || sids.Has(s.Sid) {
			t.Errorf("statement %q: every statement allows, with a Sid of its own", s.Sid)
		}
		sids.Insert(s.Sid)
		for _, a := range s.Action {
			if strings.Contains(a, "*") {
				t.Errorf("statement %s allows %s: name each action", s.Sid, a)
			}
			out.Insert(a)
		}
	}
	return out
}

func compare(t *testing.T, policy string, got, want sets.Set[string]) {
	t.Helper()
	if missing := want.Difference(got); missing.Len() > 0 {
		t.Errorf("%s does not allow %v, which nodewright calls", policy, sets.List(missing))
	}
	if extra := got.Difference(want); extra.Len() > 0 {
		t.Errorf("%s allows %v, which nodewright never calls", policy, sets.List(extra))
	}
}

var readOnly = regexp.MustCompile(`:(Describe|Get|List)[A-Z]`)

// The controller's policy allows every AWS API the controllers can call
// (the methods of the interfaces their clients are held by, and what AWS
// authorizes along with them) and nothing more; everything that changes a
// resource is scoped to the cluster's tag or to one named resource.
func TestControllerPolicy(t *testing.T) {
	stmts := readPolicy(t, "../../../docs/iam-policy.json")
	want := sets.New[string]()
	for prefix, iface := range map[string]reflect.Type{
		"ec2": reflect.TypeFor[sdk.EC2](), "ssm": reflect.TypeFor[sdk.SSM](), "iam": reflect.TypeFor[sdk.IAM](),
		"eks": reflect.TypeFor[sdk.EKS](), "pricing": reflect.TypeFor[sdk.Pricing](), "sqs": reflect.TypeFor[sdk.SQS](),
	} {
		want = want.Union(actions(prefix, iface))
	}
	// Instances are launched with the node role: EC2 needs it passed.
	want.Insert("iam:PassRole")
	compare(t, "docs/iam-policy.json", allowed(t, stmts), withImplied(want))

	// Launches use images, subnets and security groups nobody tags for
	// nodewright; everything else it creates or changes carries the cluster's tag.
	shared := regexp.MustCompile(`:(image|snapshot|security-group|subnet|capacity-reservation|placement-group|network-interface|spot-instances-request)/\*$`)
	named := regexp.MustCompile(`(:role/\$\{NODE_ROLE_NAME\}|:\$\{INTERRUPTION_QUEUE\})$`)
	for _, s := range stmts {
		mutating := false
		for _, a := range s.Action {
			mutating = mutating || !readOnly.MatchString(a) && a != "sqs:ReceiveMessage" && a != "sqs:DeleteMessage" && a != "pricing:GetProducts"
		}
		if !mutating {
			continue
		}
		tagged := false
		for _, values := range s.Condition {
			for key, v := range values {
				tagged = tagged || (strings.HasSuffix(key, "Tag/kubernetes.io/cluster/${CLUSTER_NAME}") && v == "owned")
			}
		}
		for _, r := range s.Resource {
			if !tagged && !shared.MatchString(r) && !named.MatchString(r) {
				t.Errorf("statement %s changes %s without the condition that it carries kubernetes.io/cluster/${CLUSTER_NAME}=owned", s.Sid, r)
			}
			if r == "*" {
				t.Errorf("statement %s changes any resource", s.Sid)
			}
		}
	}
}

// doctor's policy (for whoever runs `nodewright doctor` against an
// account) reads, and only what doctor reads.
func TestDoctorPolicy(t *testing.T) {
	stmts := readPolicy(t, "../../../docs/iam-policy-doctor.json")
	resolver := reflect.TypeFor[nodeclass.Resolver]()
	ec2Field, _ := resolver.FieldByName("EC2")
	ssmField, _ := resolver.FieldByName("SSM")
	cloud := reflect.TypeFor[doctor.Cloud]()
	profiles, _ := cloud.FieldByName("InstanceProfiles")
	want := actions("ec2", ec2Field.Type).Union(actions("ssm", ssmField.Type)).Union(actions("iam", profiles.Type)).
		Union(actions("eks", reflect.TypeFor[sdk.AccessEntries]())).Union(actions("ec2", reflect.TypeFor[sdk.Console]())).
		Union(actions("eks", reflect.TypeFor[sdk.EKS]()))
	got := allowed(t, stmts)
	compare(t, "docs/iam-policy-doctor.json", got, want)
	for a := range got {
		if !readOnly.MatchString(a) {
			t.Errorf("docs/iam-policy-doctor.json allows %s, which changes the account", a)
		}
	}
}

// What the controller may terminate or delete it made itself: every
// statement that terminates instances, deletes launch templates or changes
// instance profiles requires the cluster's tag as owned and the tags
// nodewright gives what it makes (an instance its NodePool, NodeClaim and
// EC2NodeClass; a launch template or profile its EC2NodeClass), so a
// managed node group's instance (cluster tag owned, eks:nodegroup-name)
// cannot be touched even by a bug.
func TestControllerPolicyTouchesOnlyWhatNodewrightMade(t *testing.T) {
	stmts := readPolicy(t, "../../../docs/iam-policy.json")
	needs := map[string][]string{
		":instance/*":         provider.InstanceOwnershipTagKeys(),
		":launch-template/*":  {awsv1.LabelEC2NodeClass},
		":instance-profile/*": {awsv1.LabelEC2NodeClass},
	}
	destructive := sets.New("ec2:TerminateInstances", "ec2:RebootInstances", "ec2:DeleteLaunchTemplate", "iam:DeleteInstanceProfile",
		"iam:RemoveRoleFromInstanceProfile", "iam:AddRoleToInstanceProfile", "iam:TagInstanceProfile")
	seen := sets.New[string]()
	for _, s := range stmts {
		acts := sets.New(s.Action...).Intersection(destructive)
		if acts.Len() == 0 {
			continue
		}
		seen = seen.Union(acts)
		if got := s.Condition["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/${CLUSTER_NAME}"]; got != "owned" {
			t.Errorf("statement %s (%v) does not require kubernetes.io/cluster/${CLUSTER_NAME}=owned on the resource", s.Sid, sets.List(acts))
		}
		for _, r := range s.Resource {
			for suffix, keys := range needs {
				if !strings.HasSuffix(r, suffix) {
					continue
				}
				for _, k := range keys {
					if s.Condition["StringLike"]["aws:ResourceTag/"+k] != "*" {
						t.Errorf("statement %s lets %v act on %s without the tag %s", s.Sid, sets.List(acts), r, k)
					}
				}
			}
		}
	}
	if missing := destructive.Difference(seen); missing.Len() > 0 {
		t.Errorf("no statement allows %v", sets.List(missing))
	}
}
