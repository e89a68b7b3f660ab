package provider_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

func TestClusterFromEKS(t *testing.T) {
	a := simaws.NewAccount()
	got, err := provider.ClusterFromEKS(context.Background(), a.EKS(), account.ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	want := userdata.Cluster{Name: account.ClusterName, Endpoint: account.Endpoint, CABundle: account.CABundle, CIDR: "172.20.0.0/16", DNS: "172.20.0.10"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
	if _, err := provider.ClusterFromEKS(context.Background(), a.EKS(), "other"); err == nil {
		t.Error("an unknown cluster must be an error")
	}
}
