package crds_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/api/crds"
	v1 "github.com/nodewright/nodewright/api/v1"
)

// The reference's own CRD validation tests (Karpenter's and its AWS
// provider's), restated as facts about objects: the reference's starting
// object, a change to it, and whether the reference's API server accepts
// it. Where ours decides otherwise the case says how in differs and is
// skipped, so every difference is reported rather than hidden.

// refStart is the object a reference test file starts every case from:
// one of our valid objects with a merge patch that makes it the
// reference's.
type refStart struct{ base, patch string }

var (
	// Karpenter's NodePool tests point at a test node class and require
	// only that a capacity type exists. Karpenter's Go types send a zero
	// consolidateAfter and expireAfter as Never.
	karpenterNodePool = refStart{validNodePool, `
spec:
  disruption: {consolidateAfter: Never}
  template:
    spec:
      nodeClassRef: {group: karpenter.test.sh, kind: TestNodeClass, name: default}
      expireAfter: Never
      requirements: [{key: karpenter.sh/capacity-type, operator: Exists}]
`}
	karpenterNodeClaim = refStart{validNodeClaim, `
spec:
  nodeClassRef: {group: karpenter.test.sh, kind: TestNodeClaim, name: default}
  expireAfter: Never
  requirements: [{key: karpenter.sh/capacity-type, operator: Exists}]
`}
	// The AWS provider's NodePool tests point at an EC2NodeClass.
	awsNodePool = refStart{validNodePool, `
spec:
  disruption: {consolidateAfter: Never}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements: [{key: karpenter.sh/capacity-type, operator: Exists}]
`}
	// The AWS provider's EC2NodeClass tests name both the family and the
	// alias, and select subnets and security groups by a wildcard tag.
	awsNodeClass = refStart{validNodeClass, `
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{alias: al2023@latest}]
  role: role-1
  securityGroupSelectorTerms: [{tags: {"*": "*"}}]
  subnetSelectorTerms: [{tags: {"*": "*"}}]
`}
)

type refCase struct {
	name   string // source file: Describe > Context > It [> Entry]
	start  refStart
	patch  string // merge patch (YAML) on the starting object
	update string // when set, the object is created, then this merge patch is applied as an update: the verdict is the update's
	strict bool   // the reference creates with strict field validation
	accept bool   // the reference's verdict
	want   string // when set, "dotted.path=value" the created object must hold
	// note, when set, says why the verdict is not the one the reference's
	// newest test asserts: a case of its v1.15 nodewright does not follow
	// yet, or a deliberate difference.
	note string
}

func accepted(name string, start refStart, patch string) refCase {
	return refCase{name: name, start: start, patch: patch, accept: true}
}

func rejected(name string, start refStart, patch string) refCase {
	return refCase{name: name, start: start, patch: patch}
}

func (c refCase) strictly() refCase { c.strict = true; return c }

// holds records a value the created object must hold ("dotted.path=value").
func (c refCase) holds(want string) refCase { c.want = want; return c }

func (c refCase) updated(update string) refCase { c.update = update; return c }

func TestReferenceValidationCases(t *testing.T) {
	cases := referenceCases()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases named %q", c.name)
		}
		seen[c.name] = true
	}
	ctx := context.Background()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.note != "" {
				t.Log(c.note)
			}
			obj := patched(t, c.start.base, c.start.patch)
			// Tabs only indent the Go source of a flow-style patch.
			obj = patched(t, toJSON(t, obj), strings.ReplaceAll(c.patch, "\t", " "))
			obj.SetName(fmt.Sprintf("ref-%d", i))
			var opts []client.CreateOption
			if c.strict {
				opts = append(opts, client.FieldValidation("Strict"))
			}
			err := kube.Create(ctx, obj, opts...)
			if err == nil {
				t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
			}
			if c.update == "" {
				verdict(t, "creating", err, c.accept)
				offlineAgrees(t, obj, err)
				if err == nil {
					runtimeAgrees(t, c.name, obj)
				}
				if err == nil && c.want != "" {
					path, value, _ := strings.Cut(c.want, "=")
					got, _, _ := unstructured.NestedString(obj.Object, strings.Split(path, ".")...)
					if got != value {
						t.Errorf("the created object holds %s=%q; the reference's holds %q", path, got, value)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("creating the object to update (the reference creates it): %v", err)
			}
			changed := patched(t, toJSON(t, obj), c.update)
			var uopts []client.UpdateOption
			if c.strict {
				uopts = append(uopts, client.FieldValidation("Strict"))
			}
			verdict(t, "updating", kube.Update(ctx, changed, uopts...), c.accept)
		})
	}
}

// offlineAgrees: the offline tools (crds.Validate, as doctor, simulate
// and plan read manifests) accept what the API server accepted and refuse
// what it refused, in its words.
func offlineAgrees(t *testing.T, obj *unstructured.Unstructured, server error) {
	t.Helper()
	local := obj.DeepCopy().Object
	if _, err := crds.Default(local); err != nil {
		t.Fatal(err)
	}
	_, offline := crds.Validate(context.Background(), local)
	switch {
	case server == nil && offline != nil:
		t.Errorf("the API server accepts; offline validation refuses: %v", offline)
	case server != nil && offline == nil && !strings.Contains(server.Error(), "field not declared in schema") && !strings.Contains(server.Error(), "unknown field"):
		t.Errorf("the API server refuses (%v); offline validation accepts", server)
	case server != nil && offline != nil && !strings.Contains(server.Error(), offline.Error()) && !slices.Equal(causes(server), causes(offline)):
		t.Errorf("offline validation refuses in other words:\n  API server: %v\n  offline:    %v", server, offline)
	}
}

// causes are an Invalid error's causes (field: message), sorted: the
// validators report a schema's errors in no fixed order.
func causes(err error) []string {
	var out []string
	var status apierrors.APIStatus
	var agg utilerrors.Aggregate
	switch {
	case errors.As(err, &status) && status.Status().Details != nil:
		for _, c := range status.Status().Details.Causes {
			out = append(out, c.Field+": "+c.Message)
		}
	case errors.As(err, &agg):
		for _, e := range agg.Errors() {
			out = append(out, e.Error())
		}
	default:
		out = append(out, err.Error())
	}
	slices.Sort(out)
	return out
}

func verdict(t *testing.T, doing string, err error, accept bool) {
	t.Helper()
	switch {
	case accept && err != nil:
		t.Errorf("the reference accepts; ours rejects %s: %v", doing, err)
	case !accept && err == nil:
		t.Errorf("the reference rejects; ours accepts %s", doing)
	case err != nil && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
		t.Errorf("want a validation error %s, got %v", doing, err)
	}
}

func toJSON(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	b, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// long is 250 lowercase letters and digits, too long for a DNS label.
var long = strings.Repeat("a1b2c3d4e5", 25)

func referenceCases() []refCase {
	var cs []refCase
	cs = append(cs, karpenterNodePoolCases()...)
	cs = append(cs, karpenterNodeClaimCases()...)
	cs = append(cs, awsNodePoolCases()...)
	cs = append(cs, awsNodeClassCases()...)
	return cs
}

func karpenterNodePoolCases() []refCase {
	const f = "karpenter/nodepool_validation_cel: CEL/Validation > "
	np := karpenterNodePool
	var cs []refCase

	// Disruption
	d := f + "Disruption > "
	cs = append(cs,
		accepted(d+"should succeed on a disabled expireAfter", np, `spec: {template: {spec: {expireAfter: Never}}}`),
		accepted(d+"should succeed on a valid expireAfter > single unit", np, `spec: {template: {spec: {expireAfter: 30s}}}`),
		accepted(d+"should succeed on a valid expireAfter > multiple units", np, `spec: {template: {spec: {expireAfter: 1h30m5s}}}`),
		rejected(d+"should fail on an invalid expireAfter > negative", np, `spec: {template: {spec: {expireAfter: -1s}}}`),
		rejected(d+"should fail on an invalid expireAfter > invalid unit", np, `spec: {template: {spec: {expireAfter: 1hr}}}`),
		rejected(d+"should fail on an invalid expireAfter > partial match", np, `spec: {template: {spec: {expireAfter: FooNever}}}`),
		accepted(d+"should succeed on a disabled consolidateAfter", np, `spec: {disruption: {consolidateAfter: Never}}`),
		accepted(d+"should succeed on a valid consolidateAfter > single unit", np, `spec: {disruption: {consolidateAfter: 30s}}`),
		accepted(d+"should succeed on a valid consolidateAfter > multiple units", np, `spec: {disruption: {consolidateAfter: 1h30m5s}}`),
		rejected(d+"should fail on an invalid consolidateAfter > negative", np, `spec: {disruption: {consolidateAfter: -1s}}`),
		rejected(d+"should fail on an invalid consolidateAfter > invalid unit", np, `spec: {disruption: {consolidateAfter: 1hr}}`),
		rejected(d+"should fail on an invalid consolidateAfter > partial match", np, `spec: {disruption: {consolidateAfter: FooNever}}`),
		accepted(d+"should succeed when setting consolidateAfter with consolidationPolicy=WhenEmpty", np, `spec: {disruption: {consolidateAfter: 30s, consolidationPolicy: WhenEmpty}}`),
		accepted(d+"should succeed when setting consolidateAfter with consolidationPolicy=WhenUnderutilized", np, `spec: {disruption: {consolidateAfter: 30s, consolidationPolicy: WhenEmptyOrUnderutilized}}`),
		accepted(d+"should succeed when setting consolidateAfter to 'Never' with consolidationPolicy=WhenUnderutilized", np, `spec: {disruption: {consolidateAfter: Never, consolidationPolicy: WhenEmptyOrUnderutilized}}`),
		accepted(d+"should succeed when setting consolidateAfter to 'Never' with consolidationPolicy=WhenEmpty", np, `spec: {disruption: {consolidateAfter: Never, consolidationPolicy: WhenEmpty}}`),
		accepted(d+"should default consolidateAfter to '0s' when omitted on a dynamic NodePool", np, `spec: {disruption: {consolidateAfter: null}}`).
			holds("spec.disruption.consolidateAfter=0s"),
	)
	for _, p := range []string{"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"} {
		cs = append(cs, accepted(d+"should succeed on a valid consolidationPolicy > "+p, np, `spec: {disruption: {consolidationPolicy: `+p+`}}`))
	}
	for _, e := range []struct{ entry, value string }{
		{"quoted 1", `"1"`}, {"quoted 2", `"2"`}, {"quoted 3", `"3"`}, {"level 0", `"0"`}, {"level 4", `"4"`}, {"level 10", `"10"`},
		{"lowercase balanced", "balanced"}, {"lowercase whenempty", "whenempty"}, {"empty string", `""`},
		{"WhenUnderutilized", "WhenUnderutilized"}, {"arbitrary string", "foo"},
	} {
		cs = append(cs, rejected(d+"should fail on an invalid consolidationPolicy > "+e.entry, np, `spec: {disruption: {consolidationPolicy: `+e.value+`}}`))
	}
	budget := func(b string) string { return `spec: {disruption: {budgets: [` + b + `]}}` }
	cs = append(cs,
		rejected(d+"should fail when creating a budget with an invalid cron", np, budget(`{nodes: "10", schedule: "*", duration: 20m0s}`)),
		rejected(d+"should fail when creating a schedule with less than 5 entries", np, budget(`{nodes: "10", schedule: "* * * * ", duration: 20m0s}`)),
		rejected(d+"should fail when creating a budget with a negative duration", np, budget(`{nodes: "10", schedule: "* * * * *", duration: -20m0s}`)),
		rejected(d+"should fail when creating a budget with a seconds duration", np, budget(`{nodes: "10", schedule: "* * * * *", duration: 30s}`)),
		rejected(d+"should fail when creating a budget with a negative value int", np, budget(`{nodes: "-10"}`)),
		rejected(d+"should fail when creating a budget with a negative value percent", np, budget(`{nodes: "-10%"}`)),
		rejected(d+"should fail when creating a budget with a value percent with more than 3 digits", np, budget(`{nodes: "1000%"}`)),
		rejected(d+"should fail when creating a budget with a cron but no duration", np, budget(`{nodes: "10", schedule: "* * * * *"}`)),
		rejected(d+"should fail when creating a budget with a duration but no cron", np, budget(`{nodes: "10", duration: 20m0s}`)),
		accepted(d+"should succeed when creating a budget with both duration and cron", np, budget(`{nodes: "10", schedule: "* * * * *", duration: 20m0s}`)),
		accepted(d+"should succeed when creating a budget with hours and minutes in duration", np, budget(`{nodes: "10", schedule: "* * * * *", duration: 2h20m0s}`)),
		accepted(d+"should succeed when creating a budget with neither duration nor cron", np, budget(`{nodes: "10"}`)),
		accepted(d+"should succeed when creating a budget with special cased crons", np, budget(`{nodes: "10", schedule: "@annually", duration: 20m0s}`)),
		rejected(d+"should fail when creating two budgets where one has an invalid crontab", np,
			budget(`{nodes: "10", schedule: "@annually", duration: 20m0s}, {nodes: "10", schedule: "*", duration: 20m0s}`)),
		rejected(d+"should fail when creating multiple budgets where one doesn't have both schedule and duration", np,
			budget(`{nodes: "10", duration: 20m0s}, {nodes: "10", schedule: "* * * * *", duration: 20m0s}, {nodes: "10"}`)),
	)
	for _, r := range []string{"Drifted", "Underutilized", "Empty", "Unhealthy"} {
		cs = append(cs, accepted(d+"should succeed when creating a budget with valid reasons > should allow disruption reason "+r, np,
			budget(`{nodes: "10", schedule: "* * * * *", duration: 20m0s, reasons: [`+r+`]}`)))
	}
	for _, e := range []struct{ entry, reason string }{
		{"should not allow invalid reason", "invalid"}, {"should not allow expired disruption reason", "expired"}, {"should not allow empty reason", `""`},
	} {
		cs = append(cs, rejected(d+"should fail when creating a budget with invalid reasons > "+e.entry, np,
			budget(`{nodes: "10", schedule: "* * * * *", duration: 20m0s, reasons: [`+e.reason+`]}`)))
	}
	cs = append(cs, accepted(d+"should allow setting multiple reasons", np,
		budget(`{nodes: "10", schedule: "* * * * *", duration: 20m0s, reasons: [Drifted, Empty]}`)))

	// Taints
	ta := f + "Taints > "
	taints := func(ts string) string { return `spec: {template: {spec: {taints: [` + ts + `]}}}` }
	cs = append(cs,
		accepted(ta+"should succeed for valid taints", np, taints(`{key: a, value: b, effect: NoSchedule}, {key: c, value: d, effect: NoExecute},
			{key: e, value: f, effect: PreferNoSchedule}, {key: Test, value: f, effect: PreferNoSchedule}, {key: test.com/Test, value: f, effect: PreferNoSchedule},
			{key: test.com.com/test, value: f, effect: PreferNoSchedule}, {key: key-only, effect: NoExecute}`)),
	)
	for _, k := range []string{"test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"} {
		cs = append(cs, rejected(ta+"should fail for invalid taint keys > "+k, np, taints(`{key: "`+k+`", effect: NoSchedule}`)))
	}
	cs = append(cs,
		accepted(ta+"should fail at runtime for taint keys that are too long > long prefix", np, taints(`{key: test.com.test.`+long+`/test, effect: NoSchedule}`)),
		accepted(ta+"should fail at runtime for taint keys that are too long > long name", np, taints(`{key: test.com.test/test-`+long+`, effect: NoSchedule}`)),
		rejected(ta+"should fail for missing taint key", np, taints(`{key: "", effect: NoSchedule}`)),
		rejected(ta+"should fail for invalid taint value", np, taints(`{key: invalid-value, value: "???", effect: NoSchedule}`)),
		rejected(ta+"should fail for invalid taint effect", np, taints(`{key: invalid-effect, effect: "???"}`)),
		accepted(ta+"should not fail for same key with different effects", np, taints(`{key: a, effect: NoSchedule}, {key: a, effect: NoExecute}`)),
	)

	// Requirements
	rq := f + "Requirements > "
	reqs := func(rs string) string { return `spec: {template: {spec: {requirements: [` + rs + `]}}}` }
	cs = append(cs,
		accepted(rq+"should succeed for valid requirement keys", np, reqs(`{key: Test, operator: Exists}, {key: test.com/Test, operator: Exists},
			{key: test.com.com/test, operator: Exists}, {key: key-only, operator: Exists}`)),
	)
	for _, k := range []string{"test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"} {
		cs = append(cs, rejected(rq+"should fail for invalid requirement keys > "+k, np, reqs(`{key: "`+k+`", operator: Exists}`)))
	}
	cs = append(cs,
		accepted(rq+"should fail at runtime for requirement keys that are too long > long prefix", np, reqs(`{key: test.com.test.`+long+`/test, operator: Exists}`)),
		accepted(rq+"should fail at runtime for requirement keys that are too long > long name", np, reqs(`{key: test.com.test/test-`+long+`, operator: Exists}`)),
		rejected(rq+"should fail for the karpenter.sh/nodepool label", np, reqs(`{key: karpenter.sh/nodepool, operator: In, values: [default]}`)),
		accepted(rq+"should allow supported ops", np, reqs(`{key: topology.kubernetes.io/zone, operator: In, values: [test]},
			{key: topology.kubernetes.io/zone, operator: Gt, values: ["1"]}, {key: topology.kubernetes.io/zone, operator: Lt, values: ["1"]},
			{key: topology.kubernetes.io/zone, operator: NotIn}, {key: topology.kubernetes.io/zone, operator: Exists}`)),
		rejected(rq+"should fail for unsupported ops > unknown", np, reqs(`{key: topology.kubernetes.io/zone, operator: unknown, values: [test]}`)),
		rejected(rq+"should fail for restricted domains > karpenter.sh", np, reqs(`{key: karpenter.sh/test, operator: In, values: [test]}`)),
		rejected(rq+"should fail for restricted labels > kubernetes.io/hostname", np, reqs(`{key: kubernetes.io/hostname/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes domains > kubernetes.io", np, reqs(`{key: kubernetes.io/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes domains > k8s.io", np, reqs(`{key: k8s.io/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes subdomains exceptions > kubernetes.io", np, reqs(`{key: subdomain.kubernetes.io/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes subdomains exceptions > k8s.io", np, reqs(`{key: subdomain.k8s.io/test, operator: In, values: [test]}`)),
	)
	for _, l := range []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
		"kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/windows-build"} {
		cs = append(cs, accepted(rq+"should allow well known label exceptions > "+l, np, reqs(`{key: `+l+`, operator: In, values: [test]}`)))
	}
	cs = append(cs,
		accepted(rq+"should allow non-empty set after removing overlapped value", np, reqs(`{key: topology.kubernetes.io/zone, operator: In, values: [test, foo]},
			{key: topology.kubernetes.io/zone, operator: NotIn, values: [test, bar]}`)),
		accepted(rq+"should allow empty requirements", np, reqs(``)),
	)
	for _, op := range []string{"Gt", "Lt", "Gte", "Lte"} {
		it := "should fail with invalid GT or LT values > "
		if op == "Gte" || op == "Lte" {
			it = "should fail with invalid GTE or LTE values > "
		}
		for _, v := range []struct{ entry, values string }{
			{"no values", ""}, {"two values", `, values: ["1", "2"]`}, {"a word", `, values: [a]`}, {"negative", `, values: ["-1"]`},
		} {
			cs = append(cs, rejected(rq+it+op+" with "+v.entry, np, reqs(`{key: topology.kubernetes.io/zone, operator: `+op+v.values+`}`)))
		}
	}
	var ninety []string
	for i := range 90 {
		ninety = append(ninety, fmt.Sprintf("instance%d", i))
	}
	cs = append(cs,
		rejected(rq+"should error when minValues is negative", np, reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [insance-type-1], minValues: -1}`)),
		rejected(rq+"should error when minValues is zero", np, reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [insance-type-1], minValues: 0}`)),
		rejected(rq+"should error when minValues is more than 50", np, reqs(`{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 51}`)),
		accepted(rq+"should allow more than 50 values if minValues is not specified.", np,
			reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [`+strings.Join(ninety, ", ")+`]}`)),
		rejected(rq+"should error when minValues is greater than the number of unique values specified within In operator", np,
			reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [insance-type-1], minValues: 2}`)),
	)

	// Labels
	lb := f + "Labels > "
	labels := func(ls string) string { return `spec: {template: {metadata: {labels: {` + ls + `}}}}` }
	cs = append(cs,
		accepted(lb+"should allow unrecognized labels", np, labels(`foo: bar`)),
		rejected(lb+"should fail for the karpenter.sh/nodepool label", np, labels(`karpenter.sh/nodepool: default`)),
		// The reference's CRD admits the key; its controller refuses it
		// (as nodewright's NodePool readiness does).
		accepted(lb+"should fail for invalid label keys", np, labels(`spaces are not allowed: bar`)),
		accepted(lb+"should fail at runtime for label keys that are too long > long prefix", np, labels(`test.com.test.`+long+`/test: bar`)),
		accepted(lb+"should fail at runtime for label keys that are too long > long name", np, labels(`test.com.test/test-`+long+`: bar`)),
		rejected(lb+"should fail for invalid label values", np, labels(`bar: "/ is not allowed"`)),
		rejected(lb+"should fail for restricted label domains > karpenter.sh", np, labels(`karpenter.sh/unknown: bar`)),
		accepted(lb+"should allow labels kOps require", np, labels(`kops.k8s.io/instancegroup: karpenter-nodes, kops.k8s.io/gpu: "1"`)),
	)
	for _, dom := range []string{"kubernetes.io", "k8s.io"} {
		cs = append(cs,
			accepted(lb+"should allow labels in kubernetes domains > "+dom, np, labels(dom+`: test-value`)),
			accepted(lb+"should allow labels prefixed with the kubernetes domain > "+dom, np, labels(dom+`/key: test-value`)),
			accepted(lb+"should allow subdomain labels in restricted domains exceptions list > "+dom, np, labels(`subdomain.`+dom+`: test-value`)),
			accepted(lb+"should allow subdomain labels prefixed with the kubernetes domain > "+dom, np, labels(`subdomain.`+dom+`/key: test-value`)),
		)
	}

	// TerminationGracePeriod
	tg := f + "TerminationGracePeriod > "
	for _, e := range []struct {
		entry, value string
		ok           bool
	}{{"single unit", "30s", true}, {"multiple units", "1h30m5s", true}, {"negative", "-1s", false}, {"invalid unit", "1hr", false}, {"never", "Never", false}, {"partial match", "FooNever", false}} {
		p := `spec: {template: {spec: {terminationGracePeriod: ` + e.value + `}}}`
		if e.ok {
			cs = append(cs, accepted(tg+"should succeed on a valid terminationGracePeriod > "+e.entry, np, p))
		} else {
			cs = append(cs, rejected(tg+"should fail on an invalid terminationGracePeriod > "+e.entry, np, p))
		}
	}

	// NodeClassRef
	nr := f + "NodeClassRef > "
	cs = append(cs,
		rejected(nr+"should fail to mutate group", np, `{}`).updated(`spec: {template: {spec: {nodeClassRef: {group: karpenter.test.mutated.sh}}}}`),
		rejected(nr+"should fail to mutate kind", np, `{}`).updated(`spec: {template: {spec: {nodeClassRef: {kind: TestNodeClass2}}}}`),
		rejected(nr+"should fail if group is unset", np, `spec: {template: {spec: {nodeClassRef: {group: ""}}}}`),
		rejected(nr+"should fail if kind is unset", np, `spec: {template: {spec: {nodeClassRef: {kind: ""}}}}`),
		rejected(nr+"should fail if name is unset", np, `spec: {template: {spec: {nodeClassRef: {name: ""}}}}`),
	)

	// Replicas
	rp := f + "Replicas > "
	cs = append(cs,
		accepted(rp+"Valid Replicas Values > should succeed when replicas is set to a positive value", np, `spec: {replicas: 5}`),
		accepted(rp+"Valid Replicas Values > should succeed when replicas is set to zero", np, `spec: {replicas: 0}`),
		accepted(rp+"Valid Replicas Values > should succeed when replicas is set to a large value", np, `spec: {replicas: 1000}`),
		rejected(rp+"Invalid Replicas Values > should fail when replicas is set to a negative value", np, `spec: {replicas: -100}`),
	)
	for _, e := range []struct{ entry, patch string }{
		{"limits.cpu", `limits: {cpu: "1000"}`}, {"limits.memory", `limits: {memory: 2000Gi}`}, {"limits.pods", `limits: {pods: "10"}`},
		{"limits.ephemeral-storage", `limits: {ephemeral-storage: 10Gi}`}, {"weight", `weight: 25`},
	} {
		cs = append(cs, rejected(rp+"should fail for incompatible fields > "+e.entry, np, `spec: {replicas: 10, `+e.patch+`}`))
	}
	for _, e := range []struct{ entry, patch string }{
		{"limits.nodes", `limits: {nodes: "100"}`},
		{"disruption with multiple budgets", `disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m, budgets: [
			{nodes: 20%, schedule: "0 9 * * mon-fri", duration: 8h0m0s, reasons: [Drifted, Empty]},
			{nodes: 30%, schedule: "0 22 * * sat,sun", duration: 4h0m0s, reasons: [Underutilized]}, {nodes: "5"}]}`},
		{"template labels", `template: {metadata: {labels: {environment: production}}}`},
		{"template annotations", `template: {metadata: {annotations: {example.com/last-updated: "2024-01-01"}}}`},
		{"taints", `template: {spec: {taints: [{key: gpu-workload, value: enabled, effect: NoSchedule}]}}`},
		{"startup taints", `template: {spec: {startupTaints: [{key: example.com/initializing, value: "true", effect: NoSchedule}]}}`},
		{"requirements", `template: {spec: {requirements: [
			{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge, m5.2xlarge, c5.large, c5.xlarge, r5.large, r5.xlarge], minValues: 3},
			{key: topology.kubernetes.io/zone, operator: In, values: [us-west-2a, us-west-2b, us-west-2c]},
			{key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]},
			{key: kubernetes.io/arch, operator: In, values: [amd64]},
			{key: karpenter.k8s.aws/instance-memory, operator: Gt, values: ["8192"]},
			{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["64"]}]}}`},
		{"expireAfter", `template: {spec: {expireAfter: 72h}}`},
		{"terminationGracePeriod", `template: {spec: {terminationGracePeriod: 5m0s}}`},
	} {
		cs = append(cs, accepted(rp+"should succeed for compatible fields > "+e.entry, np, `spec: {replicas: 10, `+e.patch+`}`))
	}
	cs = append(cs,
		accepted(rp+"should succeed when consolidateAfter is omitted on a static NodePool", np, `spec: {replicas: 3, disruption: {consolidateAfter: null}}`).
			holds("spec.disruption.consolidateAfter=0s"),
		accepted(rp+"Update Scenarios > should succeed when increasing replicas in a NodePool", np, `spec: {replicas: 3}`).updated(`spec: {replicas: 5}`),
		rejected(rp+"Update Scenarios > should fail when changing the NodePool from static to dynamic", np, `spec: {replicas: 3}`).updated(`spec: {replicas: null}`),
		rejected(rp+"Update Scenarios > should fail when changing the NodePool from dynamic to static", np, `{}`).updated(`spec: {replicas: 3}`),
		accepted(rp+"Update Scenarios > should succeed when changing the static NodePool nodes limit", np, `spec: {replicas: 3, limits: {nodes: "10"}}`).
			updated(`spec: {limits: {nodes: "100"}}`),
	)
	return cs
}

func karpenterNodeClaimCases() []refCase {
	const f = "karpenter/nodeclaim_validation_cel: Validation > "
	nc := karpenterNodeClaim
	var cs []refCase

	ta := f + "Taints > "
	taints := func(ts string) string { return `spec: {taints: [` + ts + `]}` }
	cs = append(cs,
		accepted(ta+"should succeed for valid taints", nc, taints(`{key: a, value: b, effect: NoSchedule}, {key: c, value: d, effect: NoExecute},
			{key: e, value: f, effect: PreferNoSchedule}, {key: key-only, effect: NoExecute}`)),
		rejected(ta+"should fail for invalid taint keys", nc, taints(`{key: "???", effect: ""}`)),
		rejected(ta+"should fail for missing taint key", nc, taints(`{key: "", effect: NoSchedule}`)),
		rejected(ta+"should fail for invalid taint value", nc, taints(`{key: invalid-value, value: "???", effect: NoSchedule}`)),
		rejected(ta+"should fail for invalid taint effect", nc, taints(`{key: invalid-effect, effect: "???"}`)),
		accepted(ta+"should not fail for same key with different effects", nc, taints(`{key: a, effect: NoSchedule}, {key: a, effect: NoExecute}`)),
	)

	nr := f + "NodeClassRef > "
	cs = append(cs,
		accepted(nr+"should succeed for valid group", nc, `spec: {nodeClassRef: {group: karpenter.test.sh, kind: TestNodeClass, name: nodeclass-test}}`),
		rejected(nr+"should fail for invalid group", nc, `spec: {nodeClassRef: {group: karpenter.test.sh/v1, kind: TestNodeClass, name: nodeclass-test}}`),
	)

	rq := f + "Requirements > "
	reqs := func(rs string) string { return `spec: {requirements: [` + rs + `]}` }
	cs = append(cs,
		accepted(rq+"should allow supported ops", nc, reqs(`{key: topology.kubernetes.io/zone, operator: In, values: [test]},
			{key: topology.kubernetes.io/zone, operator: Gt, values: ["1"]}, {key: topology.kubernetes.io/zone, operator: Lt, values: ["1"]},
			{key: topology.kubernetes.io/zone, operator: NotIn}, {key: topology.kubernetes.io/zone, operator: Exists}`)),
		rejected(rq+"should fail for unsupported ops > unknown", nc, reqs(`{key: topology.kubernetes.io/zone, operator: unknown, values: [test]}`)),
		rejected(rq+"should fail for restricted domains > karpenter.sh", nc, reqs(`{key: karpenter.sh/test, operator: In, values: [test]}`)),
		rejected(rq+"should fail for restricted labels > kubernetes.io/hostname", nc, reqs(`{key: kubernetes.io/hostname/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes domains > kubernetes.io", nc, reqs(`{key: kubernetes.io/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes domains > k8s.io", nc, reqs(`{key: k8s.io/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes subdomains > kubernetes.io", nc, reqs(`{key: subdomain.kubernetes.io/test, operator: In, values: [test]}`)),
		accepted(rq+"should allow kubernetes subdomains > k8s.io", nc, reqs(`{key: subdomain.k8s.io/test, operator: In, values: [test]}`)),
	)
	for _, l := range []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
		"kubernetes.io/arch", "kubernetes.io/os", "karpenter.sh/capacity-type", "node.kubernetes.io/windows-build"} {
		cs = append(cs, accepted(rq+"should allow well known label exceptions > "+l, nc, reqs(`{key: `+l+`, operator: In, values: [test]}`)))
	}
	cs = append(cs,
		accepted(rq+"should allow non-empty set after removing overlapped value", nc, reqs(`{key: topology.kubernetes.io/zone, operator: In, values: [test, foo]},
			{key: topology.kubernetes.io/zone, operator: NotIn, values: [test, bar]}`)),
		accepted(rq+"should allow empty requirements", nc, reqs(``)),
	)
	for _, op := range []string{"Gt", "Lt", "Gte", "Lte"} {
		it := "should fail with invalid GT or LT values > "
		if op == "Gte" || op == "Lte" {
			it = "should fail with invalid GTE or LTE values > "
		}
		for _, v := range []struct{ entry, values string }{
			{"no values", ""}, {"two values", `, values: ["1", "2"]`}, {"a word", `, values: [a]`}, {"negative", `, values: ["-1"]`},
		} {
			cs = append(cs, rejected(rq+it+op+" with "+v.entry, nc, reqs(`{key: topology.kubernetes.io/zone, operator: `+op+v.values+`}`)))
		}
	}
	var ninety, hundredOne []string
	for i := range 90 {
		ninety = append(ninety, fmt.Sprintf("instance%d", i))
	}
	for i := range 101 {
		hundredOne = append(hundredOne, fmt.Sprintf("{key: random-key-%d, operator: In, values: [random-value-%d]}", i, i))
	}
	cs = append(cs,
		rejected(rq+"should error when minValues is negative", nc, reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [insance-type-1], minValues: -1}`)),
		rejected(rq+"should error when minValues is zero", nc, reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [insance-type-1], minValues: 0}`)),
		rejected(rq+"should error when minValues is more than 50", nc, reqs(`{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 51}`)),
		accepted(rq+"should allow more than 50 values if minValues is not specified.", nc,
			reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [`+strings.Join(ninety, ", ")+`]}`)),
		rejected(rq+"should error when minValues is greater than the number of unique values specified within In operator", nc,
			reqs(`{key: node.kubernetes.io/instance-type, operator: In, values: [insance-type-1], minValues: 2}`)),
		rejected(rq+"should error when requirements is greater than 100", nc, reqs(strings.Join(hundredOne, ", "))),
	)

	tg := f + "TerminationGracePeriod > "
	for _, e := range []struct {
		entry, value string
		ok           bool
	}{{"single unit", "30s", true}, {"multiple units", "1h30m5s", true}, {"negative", "-1s", false}, {"invalid unit", "1hr", false}, {"never", "Never", false}, {"partial match", "FooNever", false}} {
		p := `spec: {terminationGracePeriod: ` + e.value + `}`
		if e.ok {
			cs = append(cs, accepted(tg+"should succeed on a valid terminationGracePeriod > "+e.entry, nc, p))
		} else {
			cs = append(cs, rejected(tg+"should fail on an invalid terminationGracePeriod > "+e.entry, nc, p))
		}
	}
	ea := f + "ExpireAfter > "
	for _, e := range []struct {
		entry, value string
		ok           bool
	}{{"single unit", "30s", true}, {"multiple units", "1h30m5s", true}, {"never", "Never", true}, {"negative", "-1s", false}, {"invalid unit", "1hr", false}, {"partial match", "FooNever", false}} {
		p := `spec: {expireAfter: ` + e.value + `}`
		if e.ok {
			cs = append(cs, accepted(ea+"should succeed on a valid expireAfter > "+e.entry, nc, p))
		} else {
			cs = append(cs, rejected(ea+"should fail on an invalid expireAfter > "+e.entry, nc, p))
		}
	}
	return cs
}

func awsNodePoolCases() []refCase {
	const f = "aws/nodepool_validation_cel: CEL/Validation > "
	np := awsNodePool
	var cs []refCase
	// Karpenter's well-known labels with those the AWS provider adds.
	wellKnown := []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
		"kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/windows-build",
		"karpenter.k8s.aws/capacity-reservation-id", "karpenter.k8s.aws/capacity-reservation-type", "karpenter.k8s.aws/capacity-reservation-interruptible",
		"karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
		"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/instance-family",
		"karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-local-nvme",
		"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
		"karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
		"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
		"karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer",
		"karpenter.k8s.aws/instance-accelerator-count", "topology.k8s.aws/zone-id", "karpenter.k8s.aws/placement-group-id",
		"karpenter.k8s.aws/placement-group-partition"}
	for _, l := range wellKnown {
		cs = append(cs, accepted(f+"Requirements > should allow well known label exceptions > "+l, np,
			`spec: {template: {spec: {requirements: [{key: `+l+`, operator: In, values: [test]}]}}}`))
	}
	// The capacity type requirement replaces the starting one; the tenancy
	// requirement joins it.
	cs = append(cs,
		accepted(f+"Requirements > should fail validation with only invalid capacity types", np,
			`spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [xspot]}]}}}`),
		accepted(f+"Requirements > should pass validation with valid capacity types", np,
			`spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]}}}`),
		accepted(f+"Requirements > should fail open if invalid and valid capacity types are present", np,
			`spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand, xspot]}]}}}`),
		accepted(f+"Requirements > should fail validation with only invalid tenancy types", np,
			`spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: Exists}, {key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [xdedicated]}]}}}`),
		accepted(f+"Requirements > should pass validation with valid tenancy types", np,
			`spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: Exists}, {key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [default]}]}}}`),
		accepted(f+"Requirements > should fail open if invalid and valid tenancy types are present", np,
			`spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: Exists}, {key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [default, xdedicated]}]}}}`),
	)
	for _, l := range append(wellKnown, "karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-tenancy") {
		cs = append(cs, accepted(f+"Labels > should allow well known label exceptions > "+l, np,
			`spec: {template: {metadata: {labels: {`+l+`: test}}}}`))
	}
	return cs
}

func awsNodeClassCases() []refCase {
	const f = "aws/ec2nodeclass_validation_cel: CEL/Validation > "
	nc := awsNodeClass
	var cs []refCase
	cs = append(cs,
		accepted(f+"should succeed if just specifying role", nc, `{}`),
		accepted(f+"should succeed if just specifying instance profile", nc, `spec: {role: null, instanceProfile: test-instance-profile}`),
		rejected(f+"should fail if specifying both instance profile and role", nc, `spec: {instanceProfile: test-instance-profile}`),
		rejected(f+"should fail if not specifying one of instance profile and role", nc, `spec: {role: null}`),
	)

	// AMIFamily
	af := f + "AMIFamily > "
	families := []string{"AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025"}
	for _, fam := range append(families, "Custom") {
		cs = append(cs, accepted(af+"should succeed with valid families > "+fam, nc,
			`spec: {amiSelectorTerms: [{id: ami-0123456789abcdef}], amiFamily: `+fam+`}`))
	}
	cs = append(cs, rejected(af+"should fail with the ubuntu family", nc, `spec: {amiSelectorTerms: [{id: ami-0123456789abcdef}], amiFamily: Ubuntu}`))
	for _, fam := range families {
		alias := strings.ToLower(fam) + "@latest"
		cs = append(cs,
			accepted(af+fmt.Sprintf("should succeed when the amiFamily matches amiSelectorTerms[].alias > family %q with alias %q", fam, alias), nc,
				`spec: {amiSelectorTerms: [{alias: "`+alias+`"}], amiFamily: `+fam+`}`),
			accepted(af+fmt.Sprintf("should succeed when the amiFamily is custom with amiSelectorTerms[].alias > family \"Custom\" with alias %q", alias), nc,
				`spec: {amiSelectorTerms: [{alias: "`+alias+`"}], amiFamily: Custom}`),
		)
	}
	for _, fam := range families {
		for _, other := range families {
			if fam == other {
				continue
			}
			alias := strings.ToLower(other) + "@latest"
			cs = append(cs, rejected(af+fmt.Sprintf("should fail when then amiFamily does not match amiSelectorTerms[].alias > family %q with alias %q", fam, alias), nc,
				`spec: {amiSelectorTerms: [{alias: "`+alias+`"}], amiFamily: `+fam+`}`))
		}
	}
	cs = append(cs, rejected(af+"should fail when neither amiFamily nor an alias are specified", nc, `spec: {amiSelectorTerms: [{id: ami-01234567890abcdef}], amiFamily: null}`))

	// Tags
	tg := f + "Tags > "
	cs = append(cs,
		accepted(tg+"should succeed if tags aren't in restricted tag keys", nc, `spec: {tags: {karpenter.sh/custom-key: value, karpenter.sh/managed: "true", kubernetes.io/role/key: value}}`),
	)
	for _, k := range []string{"karpenter.sh/nodepool", "kubernetes.io/cluster/test", "eks:eks-cluster-name", "karpenter.k8s.aws/ec2nodeclass", "karpenter.sh/nodeclaim"} {
		cs = append(cs, rejected(tg+"should fail if tags contain a restricted domain key > "+k, nc, `spec: {tags: {"`+k+`": test}}`))
	}

	// Selector terms of subnets, security groups, capacity reservations and
	// AMIs. (The reference's "no tag map values" cases send an empty term:
	// Go omits the empty map, so they are the "no values" cases.)
	fourTerms := `[{tags: {test: testvalue}}, {tags: {test2: testvalue2}}, {tags: {test3: testvalue3}}, {tags: {"": testvalue4}}]`
	sn := f + "SubnetSelectorTerms > "
	cs = append(cs,
		accepted(sn+"should succeed with a valid subnet selector on tags", nc, `spec: {subnetSelectorTerms: [{tags: {test: testvalue}}]}`),
		accepted(sn+"should succeed with a valid subnet selector on id", nc, `spec: {subnetSelectorTerms: [{id: subnet-12345749}]}`),
		rejected(sn+"should fail when subnet selector terms is set to nil", nc, `spec: {subnetSelectorTerms: null}`),
		rejected(sn+"should fail when no subnet selector terms exist", nc, `spec: {subnetSelectorTerms: []}`),
		rejected(sn+"should fail when a subnet selector term has no values", nc, `spec: {subnetSelectorTerms: [{}]}`),
		rejected(sn+"should fail when a subnet selector term has a tag map key that is empty", nc, `spec: {subnetSelectorTerms: [{tags: {test: ""}}]}`),
		rejected(sn+"should fail when a subnet selector term has a tag map value that is empty", nc, `spec: {subnetSelectorTerms: [{tags: {"": testvalue}}]}`),
		rejected(sn+"should fail when the last subnet selector is invalid", nc, `spec: {subnetSelectorTerms: `+fourTerms+`}`),
		rejected(sn+"should fail when specifying id with tags", nc, `spec: {subnetSelectorTerms: [{id: subnet-12345749, tags: {test: testvalue}}]}`),
	)
	sg := f + "SecurityGroupSelectorTerms > "
	cs = append(cs,
		accepted(sg+"should succeed with a valid security group selector on tags", nc, `spec: {securityGroupSelectorTerms: [{tags: {test: testvalue}}]}`),
		accepted(sg+"should succeed with a valid security group selector on id", nc, `spec: {securityGroupSelectorTerms: [{id: sg-12345749}]}`),
		accepted(sg+"should succeed with a valid security group selector on name", nc, `spec: {securityGroupSelectorTerms: [{name: testname}]}`),
		rejected(sg+"should fail when security group selector terms is set to nil", nc, `spec: {securityGroupSelectorTerms: null}`),
		rejected(sg+"should fail when no security group selector terms exist", nc, `spec: {securityGroupSelectorTerms: []}`),
		rejected(sg+"should fail when a security group selector term has no values", nc, `spec: {securityGroupSelectorTerms: [{}]}`),
		rejected(sg+"should fail when a security group selector term has a tag map key that is empty", nc, `spec: {securityGroupSelectorTerms: [{tags: {test: ""}}]}`),
		rejected(sg+"should fail when a security group selector term has a tag map value that is empty", nc, `spec: {securityGroupSelectorTerms: [{tags: {"": testvalue}}]}`),
		rejected(sg+"should fail when the last security group selector is invalid", nc, `spec: {securityGroupSelectorTerms: `+fourTerms+`}`),
		rejected(sg+"should fail when specifying id with tags", nc, `spec: {securityGroupSelectorTerms: [{id: sg-12345749, tags: {test: testvalue}}]}`),
		rejected(sg+"should fail when specifying id with name", nc, `spec: {securityGroupSelectorTerms: [{id: sg-12345749, name: my-security-group}]}`),
		rejected(sg+"should fail when specifying name with tags", nc, `spec: {securityGroupSelectorTerms: [{name: my-security-group, tags: {test: testvalue}}]}`),
	)
	cr := f + "CapacityReservationSelectorTerms > "
	crt := func(terms string) string { return `spec: {capacityReservationSelectorTerms: ` + terms + `}` }
	cs = append(cs,
		accepted(cr+"should succeed with a valid capacity reservation selector on tags", nc, crt(`[{tags: {test: testvalue}}]`)),
		accepted(cr+"should succeed with a valid capacity reservation selector on id", nc, crt(`[{id: cr-12345749}]`)),
		accepted(cr+"should succeed for a valid ownerID", nc, crt(`[{ownerID: "012345678901", tags: {test: testvalue}}]`)),
		rejected(cr+"should fail with a capacity reservation selector on a malformed id", nc, crt(`[{id: r-12345749}]`)),
		accepted(cr+"should succeed when capacity group selector terms is set to nil", nc, crt(`null`)),
		rejected(cr+"should fail when a capacity reservation selector term has no values", nc, crt(`[{}]`)),
		rejected(cr+"should fail when a capacity reservation selector term has a tag map key that is empty", nc, crt(`[{tags: {test: ""}}]`)),
		rejected(cr+"should fail when a capacity reservation selector term has a tag map value that is empty", nc, crt(`[{tags: {"": testvalue}}]`)),
		rejected(cr+"should fail when the last capacity reservation selector is invalid", nc, crt(fourTerms)),
		rejected(cr+"should fail when specifying id with tags in a single term", nc, crt(`[{id: cr-12345749, tags: {test: testvalue}}]`)),
		rejected(cr+"should fail when specifying id with ownerID in a single term", nc, crt(`[{id: cr-12345749, ownerID: "012345678901"}]`)),
		rejected(cr+"should fail when the ownerID is malformed", nc, crt(`[{ownerID: "01234567890", tags: {test: testvalue}}]`)),
		rejected(cr+"should fail when the ownerID is set by itself", nc, crt(`[{ownerID: "012345678901"}]`)),
		accepted(cr+"should succeed with a valid instanceMatchCriteria 'open'", nc, crt(`[{instanceMatchCriteria: open}]`)),
		accepted(cr+"should succeed with a valid instanceMatchCriteria 'targeted'", nc, crt(`[{instanceMatchCriteria: targeted}]`)),
		accepted(cr+"should succeed with instanceMatchCriteria combined with tags", nc, crt(`[{instanceMatchCriteria: open, tags: {test: testvalue}}]`)),
		accepted(cr+"should succeed with instanceMatchCriteria combined with ownerID and tags", nc,
			crt(`[{instanceMatchCriteria: targeted, ownerID: "012345678901", tags: {test: testvalue}}]`)),
		rejected(cr+"should fail with invalid instanceMatchCriteria value", nc, crt(`[{instanceMatchCriteria: invalid}]`)),
		rejected(cr+"should fail when specifying id with instanceMatchCriteria", nc, crt(`[{id: cr-12345749, instanceMatchCriteria: open}]`)),
	)
	am := f + "AMISelectorTerms > "
	ami := func(terms string) string { return `spec: {amiSelectorTerms: ` + terms + `}` }
	cs = append(cs,
		accepted(am+"should succeed with a valid ami selector on alias", nc, ami(`[{alias: al2023@latest}]`)),
		accepted(am+"should succeed with a valid ami selector on tags", nc, ami(`[{tags: {test: testvalue}}]`)),
		accepted(am+"should succeed with a valid ami selector on id", nc, ami(`[{id: ami-12345749}]`)),
		accepted(am+"should succeed with a valid ami selector on name", nc, ami(`[{name: testname}]`)),
		accepted(am+"should succeed with a valid ami selector on name and owner", nc, ami(`[{name: testname, owner: testowner}]`)),
		accepted(am+"should succeed when an ami selector term has an owner key with tags", nc, ami(`[{owner: testowner, tags: {test: testvalue}}]`)),
		rejected(am+"should fail when a ami selector term has no values", nc, ami(`[{}]`)),
		rejected(am+"should fail when a ami selector term has a tag map key that is empty", nc, ami(`[{tags: {test: ""}}]`)),
		rejected(am+"should fail when a ami selector term has a tag map value that is empty", nc, ami(`[{tags: {"": testvalue}}]`)),
		rejected(am+"should fail when the last ami selector is invalid", nc, ami(fourTerms)),
		rejected(am+"should fail when specifying id with other fields > alias", nc, ami(`[{id: ami-1234749, alias: al2023@latest}]`)),
		rejected(am+"should fail when specifying id with other fields > tags", nc, ami(`[{id: ami-1234749, tags: {test: testvalue}}]`)),
		rejected(am+"should fail when specifying id with other fields > name", nc, ami(`[{id: ami-1234749, name: my-custom-ami}]`)),
		rejected(am+"should fail when specifying id with other fields > owner", nc, ami(`[{id: ami-1234749, owner: "123456789"}]`)),
		rejected(am+"should fail when specifying alias with other fields > tags", nc, ami(`[{alias: al2023@latest, tags: {test: testvalue}}]`)),
		rejected(am+"should fail when specifying alias with other fields > name", nc, ami(`[{alias: al2023@latest, name: my-custom-ami}]`)),
		rejected(am+"should fail when specifying alias with other fields > owner", nc, ami(`[{alias: al2023@latest, owner: "123456789"}]`)),
		rejected(am+"should fail when specifying alias with other terms", nc, ami(`[{alias: al2023@latest}, {id: ami-1234749}]`)),
	)
	for _, e := range []struct{ entry, alias, family string }{
		{"al2 (latest)", "al2@latest", "AL2"}, {"al2 (pinned)", "al2@v20240625", "AL2"},
		{"al2023 (latest)", "al2023@latest", "AL2023"}, {"al2023 (pinned)", "al2023@v20240625", "AL2023"},
		{"bottlerocket (latest)", "bottlerocket@latest", "Bottlerocket"}, {"bottlerocket (pinned)", "bottlerocket@1.10.0", "Bottlerocket"},
		{"windows2019 (latest)", "windows2019@latest", "Windows2019"}, {"windows2022 (latest)", "windows2022@latest", "Windows2022"},
		{"windows2025 (latest)", "windows2025@latest", "Windows2025"},
	} {
		cs = append(cs, accepted(am+"should succeed for valid aliases > "+e.entry, nc, `spec: {amiFamily: `+e.family+`, amiSelectorTerms: [{alias: "`+e.alias+`"}]}`))
	}
	for _, e := range []struct{ entry, alias string }{
		{"missing family", "@latest"}, {"missing version (al2023)", "al2023"}, {"missing version (al2023@)", "al2023@"}, {"invalid separator", "al2023-latest"},
	} {
		cs = append(cs, rejected(am+"should fail for incorrectly formatted aliases > "+e.entry, nc, ami(`[{alias: "`+e.alias+`"}]`)))
	}
	cs = append(cs, rejected(am+"should fail for an alias with an invalid family", nc, ami(`[{alias: ubuntu@latest}]`)))
	for _, w := range []string{"Windows2019", "Windows2022", "Windows2025"} {
		cs = append(cs, rejected(am+"should fail when specifying non-latest versions with Windows aliases > "+w, nc, ami(`[{alias: "`+strings.ToLower(w)+`@v1.0.0"}]`)))
	}

	// EnclaveOptions (v1.15).
	en := f + "should allow enclave options > "
	cs = append(cs,
		accepted(en+"when omitted", nc, `{}`),
		accepted(en+"when enabled", nc, `spec: {enclaveOptions: {enabled: true}}`),
		accepted(en+"when disabled", nc, `spec: {enclaveOptions: {enabled: false}}`),
		rejected(f+"should reject enclave options when enabled is omitted", nc, `spec: {enclaveOptions: {}}`),
	)

	// Kubelet: an open map the API server only stores.
	kl := f + "Kubelet > "
	cs = append(cs,
		accepted(kl+"should succeed for valid inputs", nc, `spec: {kubelet: {maxPods: 110, podsPerCore: 10, kubeReserved: {cpu: 200m, memory: 100Mi},
			systemReserved: {cpu: 200m, memory: 100Mi}, evictionHard: {memory.available: 5%}}}`),
		accepted(kl+"should persist a field Karpenter has no Go representation for", nc, `spec: {kubelet: {serializeImagePulls: false}}`).strictly(),
		accepted(kl+"should admit a configuration the kubelet library rejects", nc, `spec: {kubelet: {notAKubeletField: true, podsPerCore: ten}}`).strictly(),
		accepted(kl+"should preserve a nested subtree unaltered", nc,
			`spec: {kubelet: {logging: {format: json, flushFrequency: 5s, options: {json: {infoBufferSize: 100Mi, splitStream: true}}}}}`).strictly(),
	)

	// MetadataOptions
	mo := f + "MetadataOptions > "
	cs = append(cs,
		accepted(mo+"should succeed for valid inputs", nc, `spec: {metadataOptions: {httpEndpoint: disabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 34, httpTokens: optional}}`),
		rejected(mo+"should fail for invalid for HTTPEndpoint", nc, `spec: {metadataOptions: {httpEndpoint: test}}`),
		rejected(mo+"should fail for invalid for HTTPProtocolIPv6", nc, `spec: {metadataOptions: {httpProtocolIPv6: test}}`),
		rejected(mo+"should fail for invalid for HTTPPutResponseHopLimit", nc, `spec: {metadataOptions: {httpPutResponseHopLimit: -5}}`),
		rejected(mo+"should fail for invalid for HTTPTokens", nc, `spec: {metadataOptions: {httpTokens: test}}`),
	)

	// BlockDeviceMappings: these start from a fresh EC2NodeClass without amiFamily.
	bd := f + "BlockDeviceMappings > "
	bdm := func(m string) string { return `spec: {amiFamily: null, blockDeviceMappings: [` + m + `]}` }
	cs = append(cs,
		accepted(bd+"should succeed if more than one root volume is specified", nc,
			bdm(`{deviceName: map-device-1, ebs: {volumeSize: 500G}, rootVolume: true}, {deviceName: map-device-2, ebs: {volumeSize: 50T}}`)),
		accepted(bd+"should succeed for valid VolumeSize in G", nc, bdm(`{deviceName: map-device-1, ebs: {volumeSize: 58G}}`)),
		accepted(bd+"should succeed for valid VolumeSize in T", nc, bdm(`{deviceName: map-device-1, ebs: {volumeSize: 45T}}`)),
		rejected(bd+"should fail if more than one root volume is specified", nc,
			bdm(`{deviceName: map-device-1, ebs: {volumeSize: 50G}, rootVolume: true}, {deviceName: map-device-2, ebs: {volumeSize: 50G}, rootVolume: true}`)),
		rejected(bd+"should fail VolumeSize is less then 1Gi/1G", nc, bdm(`{deviceName: map-device-1, ebs: {volumeSize: 1m}}`)),
		rejected(bd+"should fail VolumeSize is greater then 64T", nc, bdm(`{deviceName: map-device-1, ebs: {volumeSize: 100T}}`)),
		rejected(bd+"should fail for VolumeSize that do not parse into quantity values", nc, bdm(`{deviceName: map-device-1, ebs: {volumeSize: "0"}}`)),
		rejected(bd+"should fail if VolumeInitializationRate set but SnapshotID not specified", nc,
			bdm(`{deviceName: map-device-1, ebs: {volumeSize: "0", volumeInitializationRate: 100}}`)),
		rejected(bd+"should fail if VolumeInitializationRate too low", nc,
			bdm(`{deviceName: map-device-1, ebs: {volumeSize: "0", snapshotID: snap-1, volumeInitializationRate: 99}}`)),
		rejected(bd+"should fail if VolumeInitializationRate too high", nc,
			bdm(`{deviceName: map-device-1, ebs: {volumeSize: "0", snapshotID: snap-1, volumeInitializationRate: 888}}`)),
	)

	// NetworkInterfaces
	ni := f + "NetworkInterfaces > "
	nis := func(is string) string { return `spec: {networkInterfaces: [` + is + `]}` }
	cs = append(cs,
		accepted(ni+"should succeed with valid multiple network interfaces", nc, nis(`{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface},
			{networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only},
			{networkCardIndex: 1, deviceIndex: 1, interfaceType: interface}`)),
		rejected(ni+"should fail with an invalid interface type", nc, nis(`{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa}`)),
		rejected(ni+"should fail with a negative NetworkCardIndex", nc, nis(`{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface},
			{networkCardIndex: -1, deviceIndex: 0, interfaceType: interface}`)),
		rejected(ni+"should fail with a negative DeviceIndex", nc, nis(`{networkCardIndex: -1, deviceIndex: 0, interfaceType: interface},
			{networkCardIndex: 0, deviceIndex: -1, interfaceType: interface}`)),
		rejected(ni+"should fail with duplicate Network Interface and Device Index fields", nc, nis(`{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface},
			{networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: interface},
			{networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}`)),
		rejected(ni+"should fail with no primary network interface", nc, nis(`{networkCardIndex: 0, deviceIndex: 1, interfaceType: interface}`)),
		rejected(ni+"should fail when primary network interface is not ENA", nc, nis(`{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}`)),
		rejected(ni+"should fail when multiple EFA devices on one network card", nc, nis(`{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface},
			{networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}`)),
	)

	// ConnectionTracking
	ct := f + "ConnectionTracking > "
	cts := func(c string) string { return `spec: {connectionTracking: {` + c + `}}` }
	cs = append(cs,
		rejected(ct+"should fail when connectionTracking is specified with no fields set", nc, cts(``)),
		accepted(ct+"should succeed with valid tcpEstablishedTimeout", nc, cts(`tcpEstablishedTimeout: 60`)),
		accepted(ct+"should succeed with valid udpStreamTimeout", nc, cts(`udpStreamTimeout: 120`)),
		accepted(ct+"should succeed with valid udpTimeout", nc, cts(`udpTimeout: 45`)),
		accepted(ct+"should succeed with all valid connection tracking settings", nc, cts(`tcpEstablishedTimeout: 432000, udpStreamTimeout: 180, udpTimeout: 60`)),
		rejected(ct+"should fail when tcpEstablishedTimeout is below minimum (60s)", nc, cts(`tcpEstablishedTimeout: 59`)),
		rejected(ct+"should fail when tcpEstablishedTimeout is above maximum (432000s)", nc, cts(`tcpEstablishedTimeout: 432001`)),
		rejected(ct+"should fail when udpStreamTimeout is below minimum (60s)", nc, cts(`udpStreamTimeout: 59`)),
		rejected(ct+"should fail when udpStreamTimeout is above maximum (180s)", nc, cts(`udpStreamTimeout: 181`)),
		rejected(ct+"should fail when udpTimeout is below minimum (30s)", nc, cts(`udpTimeout: 29`)),
		rejected(ct+"should fail when udpTimeout is above maximum (60s)", nc, cts(`udpTimeout: 61`)),
	)

	// Role Immutability (its "role is not defined" case is the one above).
	ri := f + "Role Immutability > "
	cs = append(cs,
		accepted(ri+"should succeed when updating the role", nc, `spec: {role: test-role}`).updated(`spec: {role: test-role2}`),
		accepted(ri+"should succeed to switch between an unmanaged and managed instance profile", nc, `spec: {role: null, instanceProfile: test-instance-profile}`).
			updated(`spec: {role: test-role, instanceProfile: null}`),
		accepted(ri+"should succeed to switch between a managed and unmanaged instance profile", nc, `spec: {role: test-role}`).
			updated(`spec: {role: null, instanceProfile: test-instance-profile}`),
	)

	// CPUOptions
	co := f + "CPUOptions > "
	cs = append(cs,
		accepted(co+"should succeed with nestedVirtualization enabled", nc, `spec: {cpuOptions: {nestedVirtualization: enabled}}`),
		accepted(co+"should succeed with nestedVirtualization disabled", nc, `spec: {cpuOptions: {nestedVirtualization: disabled}}`),
		rejected(co+"should fail with invalid nestedVirtualization value", nc, `spec: {cpuOptions: {nestedVirtualization: invalid}}`),
		accepted(co+"should succeed with empty CPUOptions", nc, `spec: {cpuOptions: {}}`),
	)
	return cs
}

// runtimeAgrees: of the NodePools the API server admits, the controller
// refuses (ValidationSucceeded=False, nothing launched) exactly those the
// reference's tests say fail at run time.
func runtimeAgrees(t *testing.T, name string, obj *unstructured.Unstructured) {
	t.Helper()
	if obj.GetKind() != "NodePool" {
		return
	}
	np := &v1.NodePool{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, np); err != nil {
		t.Fatal(err)
	}
	err := np.RuntimeValidate()
	if fails := strings.Contains(name, "should fail") && !strings.Contains(name, "fail open"); fails != (err != nil) {
		t.Errorf("the reference's test says it fails at run time: %v; nodewright's runtime validation says: %v", fails, err)
	}
}
