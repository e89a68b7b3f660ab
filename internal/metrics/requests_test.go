package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

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

// A wrapped client's requests are counted by verb and resource, and the
// time each took to be answered is added up, watches left out (a watch
// lasts as long as it is open).
func TestKubeRequestsCountAndTime(t *testing.T) {
	received, release := make(chan struct{}), make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			close(received)
			<-release // answered only once the test lets it
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer server.Close()
	k, err := NewKubeRequests(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rc := &rest.Config{Host: server.URL}
	k.Wrap(rc)
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, path string) {
		req, err := http.NewRequestWithContext(context.Background(), method, server.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	const held = 50 * time.Millisecond
	// Held from when the server has the request: the client's clock
	// started before that.
	go func() { <-received; time.Sleep(held); close(release) }()
	send(http.MethodPatch, "/apis/karpenter.sh/v1/nodeclaims/a/status")
	send(http.MethodGet, "/api/v1/pods?watch=true")
	counts, secs := k.Counts(), k.Seconds()
	if counts["patch nodeclaims/status"] != 1 || counts["watch pods"] != 1 {
		t.Errorf("counts %v, want one patch of nodeclaims/status and one watch of pods", counts)
	}
	if secs["patch nodeclaims/status"] < held.Seconds() {
		t.Errorf("the patch answered after at least %v took %v s", held, secs["patch nodeclaims/status"])
	}
	if _, timed := secs["watch pods"]; timed {
		t.Errorf("a watch was timed: %v", secs)
	}
}
