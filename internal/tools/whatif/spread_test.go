package whatif_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// kube-scheduler's default spread constraints spread the pods of a
// Deployment that sets none (its replicas land in three zones, one node
// each), as kube-scheduler will place them; without them the replicas
// share one node. A pod without a controller, or with constraints of its
// own, keeps its own.
func TestDefaultSpreadPlansSpread(t *testing.T) {
	manifest := defaultNodeClass + "---\n" + amd64Pool + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
`
	plan := func(config string) map[string]int {
		t.Helper()
		objs := &whatif.Objects{}
		if err := objs.Load("web.yaml", strings.NewReader(manifest)); err != nil {
			t.Fatal(err)
		}
		if config != "" {
			spread, err := scheduling.ReadSpreadDefaults("scheduler.yaml", []byte(config))
			if err != nil {
				t.Fatal(err)
			}
			objs.DefaultSpread = spread
		}
		res, err := whatif.Run(objs)
		if err != nil {
			t.Fatal(err)
		}
		zones := map[string]int{}
		for _, nc := range res.Plan.NodeClaims {
			zones[nc.Offering.Zone] += len(nc.Pods)
		}
		return zones
	}
	if zones := plan(""); len(zones) != 1 {
		t.Errorf("without default constraints the replicas are planned in %v; want one node", zones)
	}
	for name, config := range map[string]string{
		"KubeSchedulerConfiguration": `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`,
		"the reference's own": `podTopologySpread:
  defaultConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`,
	} {
		if zones := plan(config); len(zones) != 3 {
			t.Errorf("%s: replicas planned in %v; want one in each of 3 zones", name, zones)
		}
	}
}

// A scheduler configuration kube-scheduler would refuse is refused,
// naming the file and the field; without a PodTopologySpread
// configuration, kube-scheduler's system defaults apply.
func TestReadSpreadDefaults(t *testing.T) {
	for config, want := range map[string]string{
		"podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}":                                                                    "defaultConstraints[0].maxSkew must be greater than 0",
		"podTopologySpread: {defaultConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]}":                                                                                       "defaultConstraints[0].topologyKey must be set",
		"podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Maybe}]}":                                                                            "whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway",
		"podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {a: b}}}]}":                              "labelSelector must not be set",
		"podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}": "defaultConstraints[1] is a duplicate of defaultConstraints[0]",
		"podTopologySpreads: {}": "podTopologySpreads",
		"apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n": "write kubescheduler.config.k8s.io/v1",
	} {
		if _, err := scheduling.ReadSpreadDefaults("scheduler.yaml", []byte(config)); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "scheduler.yaml: ") {
			t.Errorf("%s: %v; want %q", config, err, want)
		}
	}
	got, err := scheduling.ReadSpreadDefaults("scheduler.yaml", []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: default-scheduler}]\n"))
	if err != nil || len(got) != 2 || got[0].WhenUnsatisfiable != "ScheduleAnyway" {
		t.Errorf("system defaults: %+v, %v", got, err)
	}
}

// Defaults go only to pods with a controller and no constraints of their
// own, selecting the pods of that controller.
func TestSpreadDefaultsFor(t *testing.T) {
	d := scheduling.SystemSpreadDefaults
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}}}}
	got := d.For(owned)
	if len(got) != 2 || got[0].LabelSelector == nil || got[0].LabelSelector.MatchLabels["app"] != "web" {
		t.Errorf("an owned pod: %+v", got)
	}
	if d[0].LabelSelector != nil {
		t.Error("For changed the defaults themselves")
	}
	if got := d.For(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}); len(got) != 0 {
		t.Errorf("a bare pod: %+v", got)
	}
	own := owned.DeepCopy()
	own.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "k", WhenUnsatisfiable: corev1.DoNotSchedule}}
	if got := d.For(own); len(got) != 1 || got[0].TopologyKey != "k" {
		t.Errorf("a pod with its own: %+v", got)
	}
}
