package instancetypes_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// Read through the EC2 and Pricing APIs of the simulated account, the
// instance types (labels, capacity, allocatable, offerings, prices) are
// exactly those of the catalog: the provider's API path and the catalog
// agree.
func TestProviderMatchesCatalog(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	p := &instancetypes.Provider{EC2: account.EC2(), Pricing: account.Pricing(), Region: "us-east-1"}
	opts := instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}}
	fromAPI, err := p.InstanceTypes(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	fromCatalog, err := instancetypes.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromAPI) != len(fromCatalog) {
		t.Fatalf("%d instance types from the APIs, %d in the catalog", len(fromAPI), len(fromCatalog))
	}
	type view struct {
		Name                  string
		Labels                map[string]string
		Capacity, Allocatable scheduling.Resources
		Offerings             []scheduling.Offering
	}
	for i := range fromAPI {
		a, c := fromAPI[i], fromCatalog[i]
		got := view{a.Name, a.Requirements.Labels(), a.Capacity, a.Allocatable, a.Offerings}
		want := view{c.Name, c.Requirements.Labels(), c.Capacity, c.Allocatable, c.Offerings}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y float64) bool { return x-y < 1e-6 && y-x < 1e-6 })); diff != "" {
			t.Fatalf("%s differs (-catalog +API):\n%s", a.Name, diff)
		}
	}
	// Only zones offered by the API (and asked for) get offerings.
	oneZone, err := p.InstanceTypes(context.Background(), instancetypes.Options{Zones: []string{"us-east-1b", "eu-west-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range oneZone {
		for _, o := range it.Offerings {
			if o.Zone != "us-east-1b" {
				t.Fatalf("%s offered in %s", it.Name, o.Zone)
			}
		}
	}
}
