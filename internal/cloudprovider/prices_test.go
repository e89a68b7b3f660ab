package cloudprovider_test

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The prices an overlay decided survive the NodeClaim's annotation and
// come back on the same offerings, without changing the instance types
// the launch was given (the cache shares them).
func TestDecidedPricesRoundTrip(t *testing.T) {
	types := []*scheduling.InstanceType{
		{Name: "m5.large", Offerings: []scheduling.Offering{
			{Zone: "a", CapacityType: "spot", Price: 0.02, Overlaid: true},
			{Zone: "a", CapacityType: "on-demand", Price: 0.096},
		}},
		{Name: "c5.large", Offerings: []scheduling.Offering{{Zone: "a", CapacityType: "spot", Price: 0.03}}},
	}
	if cloudprovider.PricesOf(types[1:]) != nil {
		t.Error("no overlaid offering: no prices to carry")
	}
	value := cloudprovider.PricesOf(types).Encode()
	prices, err := cloudprovider.DecodePrices("nc", value)
	if err != nil {
		t.Fatal(err)
	}
	fresh := []*scheduling.InstanceType{
		{Name: "m5.large", Offerings: []scheduling.Offering{
			{Zone: "a", CapacityType: "spot", Price: 0.035},
			{Zone: "a", CapacityType: "on-demand", Price: 0.096},
		}},
		types[1],
	}
	got := prices.Apply(fresh)
	if o := got[0].Offerings[0]; o.Price != 0.02 || !o.Overlaid {
		t.Errorf("spot m5.large after the annotation: %+v; want the decided 0.02, overlaid", o)
	}
	if o := got[0].Offerings[1]; o.Price != 0.096 || o.Overlaid {
		t.Errorf("on-demand m5.large, which no overlay priced: %+v", o)
	}
	if fresh[0].Offerings[0].Price != 0.035 || got[1] != fresh[1] {
		t.Error("Apply must change copies, never the instance types it was given")
	}
	if _, err := cloudprovider.DecodePrices("nc", "[1,2]"); err == nil || !strings.Contains(err.Error(), "delete the NodeClaim") {
		t.Errorf("unreadable prices: %v", err)
	}
}
