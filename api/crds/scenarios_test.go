package crds_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every object of every scenario is accepted as written by `kubectl apply`,
// which validates strictly: a field our CRDs lacked would be an error.
func TestScenariosApplyWithKubectl(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("expected the six scenario files, found %v (%v)", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			out := kubectl(t, "apply", "-f", file)
			created := strings.Count(out, " created")
			if created < 4 { // an EC2NodeClass, a NodePool, aws-auth and a workload at least
				t.Fatalf("kubectl apply -f %s created %d objects:\n%s", file, created, out)
			}
			for _, kind := range []string{"ec2nodeclass.karpenter.k8s.aws/", "nodepool.karpenter.sh/"} {
				if !strings.Contains(out, kind) {
					t.Errorf("kubectl apply output names no %s object:\n%s", kind, out)
				}
			}
			kubectl(t, "delete", "--wait", "-f", file)
		})
	}
}

// kubectl runs kubectl against the test control plane and returns its
// output, failing the test when it fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runKubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runKubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, err := cluster.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
