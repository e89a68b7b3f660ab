package instancetypes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// spotOutage is the account's EC2 API with DescribeSpotPriceHistory
// failing while down is set.
type spotOutage struct {
	*simaws.EC2
	down bool
}

func (s *spotOutage) DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, opts ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	if s.down {
		return nil, errors.New("UnauthorizedOperation: not authorized to perform ec2:DescribeSpotPriceHistory")
	}
	return s.EC2.DescribeSpotPriceHistory(ctx, in, opts...)
}

// Prices never stop the instance types: without the Pricing API nodes are
// priced by the built-in table (spot as on-demand while the spot history
// fails too); once the APIs answer, their prices are used, and when they
// fail again the last answer is kept. The status says which, since when
// and why.
func TestPricesFallBackAndRecover(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC))
	ec2API := &spotOutage{EC2: account.EC2(), down: true}
	p := &instancetypes.Provider{EC2: ec2API, Pricing: account.Pricing(), Region: "eu-west-1", Clock: clk}
	account.SetFaults(simaws.Faults{PricingDenied: true})
	ctx := context.Background()
	price := func(specs []instancetypes.Spec, name string) (onDemand, spot float64) {
		for _, s := range specs {
			if s.Name == name {
				return s.OnDemand, s.Offered["us-east-1a"]
			}
		}
		t.Fatalf("no %s", name)
		return 0, 0
	}

	specs, err := p.Specs(ctx)
	if err != nil {
		t.Fatalf("without the Pricing API: %v", err)
	}
	table, region, err := instancetypes.BuiltInPrices("eu-west-1")
	if err != nil || region != "us-east-1" || table.Published == "" {
		t.Fatalf("built-in table for eu-west-1: %s %q %v", region, table.Published, err)
	}
	if od, spot := price(specs, "m5.large"); od != table.OnDemand["m5.large"] || spot != od || od == 0 {
		t.Errorf("m5.large without the APIs: on-demand %v spot %v, want the built-in %v for both", od, spot, table.OnDemand["m5.large"])
	}
	st := p.Prices()
	if st.OnDemand.Source != instancetypes.PricesBuiltIn || st.Spot.Source != instancetypes.PricesBuiltIn ||
		!strings.Contains(st.OnDemand.Err.Error(), "pricing:GetProducts") || st.OnDemand.TableRegion != "us-east-1" || !st.OnDemand.Since.Equal(clk.Now()) {
		t.Errorf("status without the APIs: %+v", st)
	}

	clk.Step(time.Minute)
	account.SetFaults(simaws.Faults{})
	ec2API.down = false
	specs, err = p.Specs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	od, spot := price(specs, "m5.large")
	if spot >= od || spot != instancetypes.SpotPrice("m5.large", "us-east-1a", od) {
		t.Errorf("with the APIs back: on-demand %v spot %v, want the account's spot price", od, spot)
	}
	if st := p.Prices(); st.OnDemand.Source != instancetypes.PricesFromAPI || st.Spot.Source != instancetypes.PricesFromAPI || !st.OnDemand.Answered.Equal(clk.Now()) {
		t.Errorf("status with the APIs: %+v", st)
	}
	answered := clk.Now()

	clk.Step(time.Minute)
	account.SetFaults(simaws.Faults{PricingDenied: true})
	ec2API.down = true
	specs, err = p.Specs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if od2, spot2 := price(specs, "m5.large"); od2 != od || spot2 != spot {
		t.Errorf("after the APIs failed again: %v/%v, want the last answer %v/%v", od2, spot2, od, spot)
	}
	st = p.Prices()
	if st.OnDemand.Source != instancetypes.PricesLastKnown || st.Spot.Source != instancetypes.PricesLastKnown ||
		!st.OnDemand.Answered.Equal(answered) || !st.OnDemand.Since.Equal(clk.Now()) || st.OnDemand.Err == nil {
		t.Errorf("status after the APIs failed again: %+v", st)
	}
}

// The built-in table is the catalog's us-east-1 prices with their date.
func TestBuiltInPricesAreTheCatalogs(t *testing.T) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	table, region, err := instancetypes.BuiltInPrices("us-east-1")
	if err != nil || region != "us-east-1" || table.Published != "2026-07-06" {
		t.Fatalf("us-east-1: %s %s %v", region, table.Published, err)
	}
	n := 0
	for _, s := range specs {
		if s.OnDemand > 0 {
			n++
			if table.OnDemand[s.Name] != s.OnDemand {
				t.Errorf("%s: built-in %v, catalog %v", s.Name, table.OnDemand[s.Name], s.OnDemand)
			}
		}
	}
	if n == 0 || len(table.OnDemand) != n {
		t.Errorf("built-in table has %d prices, the catalog %d: run make generate", len(table.OnDemand), n)
	}
}

// noPricing fails the test when the Pricing API is called.
type noPricing struct{ t *testing.T }

func (n noPricing) GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	n.t.Error("the Pricing API was called from an isolated VPC")
	return nil, errors.New("no route to api.pricing.us-east-1.amazonaws.com")
}

// In an isolated VPC the Pricing API, which has no VPC endpoint, is never
// called: on-demand prices are the built-in table's, without an error, and
// spot prices still come from EC2.
func TestIsolatedVPCUsesTheBuiltInPrices(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	p := &instancetypes.Provider{EC2: account.EC2(), Pricing: noPricing{t}, Region: "us-east-1", IsolatedVPC: true,
		Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC))}
	specs, err := p.Specs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table, _, _ := instancetypes.BuiltInPrices("us-east-1")
	for _, s := range specs {
		if s.Name == "m5.large" && s.OnDemand != table.OnDemand["m5.large"] {
			t.Errorf("m5.large on-demand %v; want the built-in %v", s.OnDemand, table.OnDemand["m5.large"])
		}
	}
	st := p.Prices()
	if st.OnDemand.Source != instancetypes.PricesBuiltIn || st.OnDemand.Err != nil || st.Spot.Source != instancetypes.PricesFromAPI {
		t.Errorf("price status %+v; want built-in on-demand prices without an error, spot from the API", st)
	}
}
