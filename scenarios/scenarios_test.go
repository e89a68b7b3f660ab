package scenarios

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func TestWithPodsSpreadsTheCountOverTheWorkloads(t *testing.T) {
	_, manifest, err := Load("scale")
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithPods(manifest, 10_002)
	if err != nil {
		t.Fatal(err)
	}
	replicas := map[string]int32{}
	kinds := 0
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(out)), 4096)
	for {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec appsv1.DeploymentSpec `json:"spec"`
		}
		if err := decoder.Decode(&obj); err != nil {
			break
		}
		kinds++
		if obj.Kind == "Deployment" {
			replicas[obj.Metadata.Name] = *obj.Spec.Replicas
		}
	}
	want := map[string]int32{"tiny": 2501, "small": 2501, "medium": 2500, "large": 2500}
	for name, n := range want {
		if replicas[name] != n {
			t.Errorf("Deployment %s has %d replicas, want %d (all: %v)", name, replicas[name], n, replicas)
		}
	}
	if kinds != 7 {
		t.Errorf("%d documents after scaling, want the scenario's 7", kinds)
	}
	if _, err := WithPods([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 5); err == nil || !strings.Contains(err.Error(), "no Deployment") {
		t.Errorf("scaling a manifest without workloads: %v, want an error naming the missing Deployment", err)
	}
}
