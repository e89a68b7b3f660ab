package metrics

import "testing"

func TestClassify(t *testing.T) {
	for _, tc := range []struct{ method, path, watch, verb, resource string }{
		{"PATCH", "/api/v1/namespaces/default/pods/web-1/status", "", "patch", "pods/status"},
		{"GET", "/api/v1/pods", "", "list", "pods"},
		{"GET", "/api/v1/pods", "true", "watch", "pods"},
		{"GET", "/api/v1/namespaces/kube-system/configmaps/aws-auth", "", "get", "configmaps"},
		{"GET", "/api/v1/namespaces/default", "", "get", "namespaces"},
		{"POST", "/apis/karpenter.sh/v1/nodeclaims", "", "create", "nodeclaims"},
		{"PUT", "/apis/karpenter.sh/v1/nodeclaims/a/status", "", "update", "nodeclaims/status"},
		{"DELETE", "/api/v1/nodes/ip-10-0-0-1", "", "delete", "nodes"},
		{"POST", "/api/v1/namespaces/default/pods/web-1/eviction", "", "create", "pods/eviction"},
		{"GET", "/apis", "", "get", "discovery"},
	} {
		verb, resource := Classify(tc.method, tc.path, tc.watch)
		if verb != tc.verb || resource != tc.resource {
			t.Errorf("%s %s: %s %s, want %s %s", tc.method, tc.path, verb, resource, tc.verb, tc.resource)
		}
	}
}
