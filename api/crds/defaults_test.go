package crds_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
)

// createAndRead creates the YAML object (after a merge patch) and reads it
// back as the Go type, as a controller would see it.
func createAndRead[T client.Object](t *testing.T, base, patch, name string, into T) T {
	t.Helper()
	ctx := context.Background()
	obj := patched(t, base, patch)
	obj.SetName(name)
	if err := kube.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, into); err != nil {
		t.Fatal(err)
	}
	return into
}

func TestNodePoolDefaults(t *testing.T) {
	wantDisruption := v1.Disruption{
		ConsolidateAfter:    "0s",
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		Budgets:             []v1.Budget{{Nodes: "10%"}},
	}
	for _, tc := range []struct {
		name, patch string
		want        v1.Disruption
	}{
		{"no disruption", `{}`, wantDisruption},
		{"consolidateAfter only", `spec: {disruption: {consolidateAfter: 30s}}`, v1.Disruption{
			ConsolidateAfter: "30s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []v1.Budget{{Nodes: "10%"}},
		}},
		{"policy", `spec: {disruption: {consolidateAfter: 0s, consolidationPolicy: WhenEmpty}}`, v1.Disruption{
			ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, Budgets: []v1.Budget{{Nodes: "10%"}},
		}},
		{"policy without consolidateAfter (v1.15)", `spec: {disruption: {consolidationPolicy: WhenEmpty}}`, v1.Disruption{
			ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, Budgets: []v1.Budget{{Nodes: "10%"}},
		}},
		{"empty disruption", `spec: {disruption: {}}`, wantDisruption},
		{"budget without nodes", `spec: {disruption: {consolidateAfter: 0s, budgets: [{schedule: "@daily", duration: 1h}]}}`, v1.Disruption{
			ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			Budgets: []v1.Budget{{Nodes: "10%", Schedule: ptr.To("@daily"), Duration: durationOf(t, "1h")}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := createAndRead(t, validNodePool, tc.patch, "defaults", &v1.NodePool{})
			if diff := cmp.Diff(tc.want, np.Spec.Disruption); diff != "" {
				t.Errorf("disruption defaults (-want +got):\n%s", diff)
			}
			if np.Spec.Template.Spec.ExpireAfter != "720h" {
				t.Errorf("expireAfter defaulted to %q, want 720h", np.Spec.Template.Spec.ExpireAfter)
			}
		})
	}
}

func TestNodeClaimDefaults(t *testing.T) {
	nc := createAndRead(t, validNodeClaim, `{}`, "defaults", &v1.NodeClaim{})
	if nc.Spec.ExpireAfter != "720h" {
		t.Errorf("expireAfter defaulted to %q, want 720h", nc.Spec.ExpireAfter)
	}
}

func TestEC2NodeClassMetadataOptionsDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, patch string
		want        awsv1.MetadataOptions
	}{
		{"unset", `{}`, awsv1.MetadataOptions{
			HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"),
			HTTPPutResponseHopLimit: ptr.To[int64](1), HTTPTokens: ptr.To("required"),
		}},
		{"partly set", `spec: {metadataOptions: {httpPutResponseHopLimit: 2}}`, awsv1.MetadataOptions{
			HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"),
			HTTPPutResponseHopLimit: ptr.To[int64](2), HTTPTokens: ptr.To("required"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := createAndRead(t, validNodeClass, tc.patch, "defaults", &awsv1.EC2NodeClass{})
			if diff := cmp.Diff(&tc.want, nc.Spec.MetadataOptions); diff != "" {
				t.Errorf("metadataOptions (-want +got):\n%s", diff)
			}
		})
	}
}

func durationOf(t *testing.T, s string) *metav1.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return &metav1.Duration{Duration: d}
}
