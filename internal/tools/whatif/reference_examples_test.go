package whatif_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/instancetypes/instancetypestest"
	"github.com/nodewright/nodewright/internal/referencetest"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// TestReferenceExamplesPlanTheReferencesTypes: every NodePool of the
// reference's examples/v1, one file at a time with every workload of its
// examples/workloads (two replicas each), is planned on instance types
// the reference's own instance type filter admits for that NodePool's
// requirements (its code, on the same DescribeInstanceTypes records):
// every planned claim's type, and every type it may launch as.
func TestReferenceExamplesPlanTheReferencesTypes(t *testing.T) {
	dir := referencetest.ModuleDir(t, referencetest.AWSProvider, instancetypestest.Reference)
	examples, err := filepath.Glob(filepath.Join(dir, "examples", "v1", "*.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("the reference's examples: %v", err)
	}
	workloadFiles, err := filepath.Glob(filepath.Join(dir, "examples", "workloads", "*.yaml"))
	if err != nil || len(workloadFiles) == 0 {
		t.Fatalf("the reference's workloads: %v", err)
	}
	// Each workload as kubectl applies it: a field the API server does not
	// know (a misspelt allowPrivilegeEscalation in some) is refused, as
	// kubectl's strict field validation has the API server refuse it.
	var workloads strings.Builder
	for _, f := range workloadFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc := regexp.MustCompile(`(?m)^(\s*)replicas: 0$`).ReplaceAllString(string(data), "${1}replicas: 2")
		if err := (&whatif.Objects{}).Load(filepath.Base(f), strings.NewReader(doc)); err != nil {
			if !strings.Contains(err.Error(), "strict decoding error: unknown field") {
				t.Errorf("workload %s: %v", filepath.Base(f), err)
			}
			t.Logf("workload %s is refused, as the API server refuses it: %v", filepath.Base(f), err)
			continue
		}
		workloads.WriteString("---\n" + doc + "\n")
	}
	type planned struct {
		example, pool, family string
		claim                 whatif.NodeClaimReport
	}
	var claims []planned
	probes := map[string][][]corev1.NodeSelectorRequirement{} // by AMI family
	probeOf := map[string]int{}                               // by example/pool
	placed := map[string]int{}
	for _, example := range examples {
		data, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(example)
		doc := strings.ReplaceAll(string(data), "${CLUSTER_NAME}", "nodewright-sim") + "\n" + workloads.String()
		objs := &whatif.Objects{}
		if err := objs.Load(name, strings.NewReader(doc)); err != nil {
			// The CRDs are the reference's (api/crds checks them), so what
			// they refuse the reference's refuse too.
			if !strings.Contains(err.Error(), " is invalid: ") {
				t.Errorf("%s: %v", name, err)
			}
			t.Logf("%s is refused as the CRDs refuse it: %v", name, err)
			continue
		}
		res, err := whatif.RunWith(objs, simulated())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		families := map[string]string{}
		for _, c := range objs.EC2NodeClasses {
			families[c.Name] = awsv1.FamilyOf(c)
		}
		for _, np := range objs.NodePools {
			family := families[np.Spec.Template.Spec.NodeClassRef.Name]
			var reqs []corev1.NodeSelectorRequirement
			for _, r := range np.Spec.Template.Spec.Requirements {
				reqs = append(reqs, r.NodeSelectorRequirement())
			}
			probeOf[name+"/"+np.Name] = len(probes[family])
			probes[family] = append(probes[family], reqs)
		}
		r := whatif.NewReport(res)
		for _, c := range r.NodeClaims {
			pool := c.NodePool
			claims = append(claims, planned{example: name, pool: pool, family: familyOfPool(objs, pool), claim: c})
			placed[name] += len(c.Pods)
		}
		reasons := map[string]bool{}
		for _, u := range r.Unschedulable {
			reasons[u.Reason] = true
		}
		t.Logf("%s: %d pods on %d planned nodes; %d pods not placed (%s)", name, placed[name], len(r.NodeClaims), len(r.Unschedulable), strings.Join(firstOf(reasons, 2), "; "))
	}
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	admitted := map[string]map[string][]bool{} // family → type → probe
	for family, list := range probes {
		var inputs []instancetypestest.Input
		for _, s := range specs {
			info, err := json.Marshal(s.Info)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, instancetypestest.Input{Info: info, Region: account.Region, Zones: []string{account.Region + "a"},
				ZoneInfo: []map[string]string{{"zone": account.Region + "a"}}, AMIFamily: family, VMMemoryOverheadPercent: 0.075, Probes: list})
		}
		admitted[family] = map[string][]bool{}
		for _, o := range instancetypestest.Run(t, inputs) {
			admitted[family][o.Name] = o.Admitted
		}
	}
	for _, p := range claims {
		probe := probeOf[p.example+"/"+p.pool]
		for _, it := range append([]string{p.claim.InstanceType}, p.claim.InstanceTypes...) {
			if a, ok := admitted[p.family][it]; !ok || !a[probe] {
				t.Errorf("%s: NodePool %s planned %s, which the reference's requirements do not admit", p.example, p.pool, it)
				break
			}
		}
	}
	if len(claims) == 0 {
		t.Fatal("no example planned a node")
	}
}

func familyOfPool(objs *whatif.Objects, pool string) string {
	for _, np := range objs.NodePools {
		if np.Name != pool {
			continue
		}
		for _, c := range objs.EC2NodeClasses {
			if c.Name == np.Spec.Template.Spec.NodeClassRef.Name {
				return awsv1.FamilyOf(c)
			}
		}
	}
	return ""
}

func firstOf(set map[string]bool, n int) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out[:min(n, len(out))]
}
