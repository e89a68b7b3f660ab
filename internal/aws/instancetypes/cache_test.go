package instancetypes_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/pricing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// countingPricing counts the price list reads the cache makes.
type countingPricing struct {
	*simaws.Pricing
	calls int
}

func (c *countingPricing) GetProducts(ctx context.Context, in *pricing.GetProductsInput, opts ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	c.calls++
	return c.Pricing.GetProducts(ctx, in, opts...)
}

func TestCacheRefreshesAfterTTL(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	prices := &countingPricing{Pricing: account.Pricing()}
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC))
	cache := &instancetypes.Cache{
		Provider: &instancetypes.Provider{EC2: account.EC2(), Pricing: prices, Region: "us-east-1"},
		Clock:    clock, TTL: 10 * time.Minute,
	}
	ctx := context.Background()
	for range 3 {
		if specs, err := cache.Specs(ctx); err != nil || len(specs) < 1000 {
			t.Fatalf("%d specs, %v", len(specs), err)
		}
	}
	if prices.calls != 1 {
		t.Errorf("three reads within the TTL made %d API reads, want 1", prices.calls)
	}
	clock.Step(11 * time.Minute)
	if _, err := cache.Specs(ctx); err != nil || prices.calls != 2 {
		t.Errorf("after the TTL the prices must be read again: %d reads, %v", prices.calls, err)
	}
}
