package convert

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The v0.32 upgrade guide's mapping, row by row: each v1alpha5 field as
// the guide shows it, and the v1 field (and value) it becomes.
func TestProvisionerAsTheUpgradeGuide(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		// want are paths into the v1 NodePool's JSON and their values.
		want map[string]any
		// notWant are requirements keys that must not be added.
		err string
	}{
		{name: "limits and weight stay outside the template; labels and annotations under its metadata",
			spec: "providerRef: {name: default}\nannotations: {custom-annotation: custom-value}\nlabels: {team: team-a}\nlimits: {resources: {cpu: 1000, memory: 1000Gi}}\nweight: 50",
			want: map[string]any{"spec.limits.cpu": "1k", "spec.limits.memory": "1000Gi", "spec.weight": 50.0,
				"spec.template.metadata.labels.team": "team-a", "spec.template.metadata.annotations.custom-annotation": "custom-value"}},
		{name: "taints, startupTaints and requirements under the template's spec",
			spec: "providerRef: {name: default}\ntaints: [{key: example.com/special-taint, value: \"true\", effect: NoSchedule}]\nstartupTaints: [{key: example.com/another-taint, value: \"true\", effect: NoSchedule}]\nrequirements: [{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}]",
			want: map[string]any{"spec.template.spec.taints.0.key": "example.com/special-taint", "spec.template.spec.startupTaints.0.key": "example.com/another-taint",
				"spec.template.spec.requirements.0.key": "karpenter.k8s.aws/instance-category"}},
		{name: "providerRef is the nodeClassRef of the EC2NodeClass of the same name",
			spec: "providerRef: {name: al2-nodes}",
			want: map[string]any{"spec.template.spec.nodeClassRef.name": "al2-nodes", "spec.template.spec.nodeClassRef.kind": "EC2NodeClass", "spec.template.spec.nodeClassRef.group": "karpenter.k8s.aws"}},
		{name: "ttlSecondsAfterEmpty is WhenEmpty after as long",
			spec: "providerRef: {name: default}\nttlSecondsAfterEmpty: 120",
			want: map[string]any{"spec.disruption.consolidationPolicy": "WhenEmpty", "spec.disruption.consolidateAfter": "2m"}},
		{name: "consolidation.enabled is WhenEmptyOrUnderutilized (v1beta1's WhenUnderutilized)",
			spec: "providerRef: {name: default}\nconsolidation: {enabled: true}",
			want: map[string]any{"spec.disruption.consolidationPolicy": "WhenEmptyOrUnderutilized", "spec.disruption.consolidateAfter": "0s"}},
		{name: "neither: never consolidated, as before",
			spec: "providerRef: {name: default}",
			want: map[string]any{"spec.disruption.consolidationPolicy": "WhenEmpty", "spec.disruption.consolidateAfter": "Never", "spec.template.spec.expireAfter": "Never"}},
		{name: "ttlSecondsUntilExpired is expireAfter (30 days, 720h)",
			spec: "providerRef: {name: default}\nttlSecondsUntilExpired: 2592000",
			want: map[string]any{"spec.template.spec.expireAfter": "720h"}},
		{name: "v1alpha5's default requirements are written out",
			spec: "providerRef: {name: default}",
			want: map[string]any{"spec.template.spec.requirements.0.key": "karpenter.k8s.aws/instance-category", "spec.template.spec.requirements.1.operator": "Gt",
				"spec.template.spec.requirements.1.values.0": "2", "spec.template.spec.requirements.2.values.0": "on-demand",
				"spec.template.spec.requirements.3.values.0": "linux", "spec.template.spec.requirements.4.values.0": "amd64"}},
		{name: "an instance type requirement keeps v1alpha5 from adding category and generation",
			spec: "providerRef: {name: default}\nrequirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}, {key: karpenter.sh/capacity-type, operator: In, values: [spot]}, {key: kubernetes.io/arch, operator: In, values: [arm64]}, {key: kubernetes.io/os, operator: In, values: [linux]}]",
			want: map[string]any{"spec.template.spec.requirements.#": 4.0}},
		{name: "karpenter.sh/provisioner-name is karpenter.sh/nodepool",
			spec: "providerRef: {name: default}\nlabels: {karpenter.sh/provisioner-name: old}",
			want: map[string]any{"spec.template.metadata.labels.karpenter\\.sh/nodepool": "old"}},
		{name: "kubeletConfiguration moves to the class (kept in the annotation until settled)",
			spec: "providerRef: {name: default}\nkubeletConfiguration: {maxPods: 20, systemReserved: {cpu: 100m}}",
			want: map[string]any{"metadata.annotations." + strings.ReplaceAll(KubeletAnnotation, ".", "\\."): `{"maxPods":20,"systemReserved":{"cpu":"100m"}}`}},
		{name: "containerRuntime dockerd is refused", spec: "providerRef: {name: default}\nkubeletConfiguration: {containerRuntime: dockerd}", err: "containerRuntime: dockerd is gone"},
		{name: "kubelet is the v1beta1 name", spec: "providerRef: {name: default}\nkubelet: {maxPods: 20}", err: "spec.kubeletConfiguration"},
		{name: "both empty TTL and consolidation", spec: "providerRef: {name: default}\nttlSecondsAfterEmpty: 30\nconsolidation: {enabled: true}", err: "keep one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkConverted(t, "karpenter.sh/v1alpha5", "Provisioner", tc.spec, tc.want, tc.err)
		})
	}
}

// The guide's AWSNodeTemplate rows.
func TestAWSNodeTemplateAsTheUpgradeGuide(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       map[string]any
		err        string
	}{
		{name: "tags selectors are tag terms", spec: "subnetSelector: {karpenter.sh/discovery: karpenter-demo}\nsecurityGroupSelector: {karpenter.sh/discovery: karpenter-demo}",
			want: map[string]any{"spec.subnetSelectorTerms.0.tags.karpenter\\.sh/discovery": "karpenter-demo", "spec.securityGroupSelectorTerms.0.tags.karpenter\\.sh/discovery": "karpenter-demo"}},
		{name: "aws::ids are id terms, one each", spec: "subnetSelector: {aws::ids: \"subnet-123,subnet-456\"}\nsecurityGroupSelector: {aws::ids: \"sg-123, sg-456\"}",
			want: map[string]any{"spec.subnetSelectorTerms.0.id": "subnet-123", "spec.subnetSelectorTerms.1.id": "subnet-456", "spec.securityGroupSelectorTerms.1.id": "sg-456"}},
		{name: "AMI ids", spec: "subnetSelector: {a: b}\nsecurityGroupSelector: {a: b}\namiSelector: {aws::ids: \"ami-123,ami-456\"}",
			want: map[string]any{"spec.amiSelectorTerms.0.id": "ami-123", "spec.amiSelectorTerms.1.id": "ami-456", "spec.amiFamily": "AL2"}},
		{name: "AMI names and owners, each combination", spec: "subnetSelector: {a: b}\nsecurityGroupSelector: {a: b}\namiSelector: {aws::name: \"my-name1,my-name2\", aws::owners: \"123456789,amazon\"}",
			want: map[string]any{"spec.amiSelectorTerms.#": 4.0, "spec.amiSelectorTerms.0.name": "my-name1", "spec.amiSelectorTerms.0.owner": "123456789", "spec.amiSelectorTerms.3.owner": "amazon"}},
		{name: "no amiFamily was AL2: its alias", spec: "subnetSelector: {a: b}\nsecurityGroupSelector: {a: b}",
			want: map[string]any{"spec.amiSelectorTerms.0.alias": "al2@latest"}},
		{name: "instanceProfile kept", spec: "subnetSelector: {a: b}\nsecurityGroupSelector: {a: b}\ninstanceProfile: KarpenterNodeInstanceProfile-karpenter-demo",
			want: map[string]any{"spec.instanceProfile": "KarpenterNodeInstanceProfile-karpenter-demo"}},
		{name: "launchTemplate refused", spec: "subnetSelector: {a: b}\nlaunchTemplate: my-template", err: "launch templates made outside Karpenter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkConverted(t, "karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate", tc.spec, tc.want, tc.err)
		})
	}
}

// checkConverted converts an object of the kind with the spec (YAML,
// its lines under spec:) and checks the first object it becomes at each
// path, or the error.
func checkConverted(t *testing.T, apiVersion, kind, spec string, want map[string]any, wantErr string) {
	t.Helper()
	doc := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata: {name: default}\nspec:\n  " + strings.ReplaceAll(spec, "\n", "\n  ") + "\n"
	res, err := Document(apiVersion, kind, []byte(doc))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one saying %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	obj := res.Objects[0]
	got := asMap(t, obj)
	for path, value := range want {
		if v := lookup(got, path); !equalJSON(v, value) {
			t.Errorf("%s = %v, want %v\n%s", path, v, value, asYAML(t, obj))
		}
	}
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func asYAML(t *testing.T, v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// lookup follows a dotted path (\. escapes a dot; "#" is a list's length).
func lookup(m any, path string) any {
	parts := strings.Split(strings.ReplaceAll(path, `\.`, "\x00"), ".")
	cur := m
	for _, p := range parts {
		p = strings.ReplaceAll(p, "\x00", ".")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[p]
		case []any:
			if p == "#" {
				return float64(len(x))
			}
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
