package instancetypes

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Cache keeps the instance types and prices a Provider reads, and reads
// them again once they are older than TTL. Concurrent callers share one
// read.
type Cache struct {
	Provider *Provider
	Clock    clock.PassiveClock
	TTL      time.Duration

	mu      sync.Mutex
	specs   []Spec
	fetched time.Time
}

// Specs returns the cached instance types, refreshing them when stale. When
// a refresh fails, the previous ones are returned with the error.
func (c *Cache) Specs(ctx context.Context) ([]Spec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.specs != nil && c.Clock.Since(c.fetched) < c.TTL {
		return c.specs, nil
	}
	specs, err := c.Provider.Specs(ctx)
	if err != nil {
		return c.specs, err
	}
	c.specs, c.fetched = specs, c.Clock.Now()
	if st := c.Provider.Prices(); st.OnDemand.Source != PricesFromAPI || st.Spot.Source != PricesFromAPI {
		// Not the API's prices: ask again sooner than TTL.
		c.fetched = c.fetched.Add(-c.TTL + min(c.TTL, PriceRetry))
	}
	return specs, nil
}

// PriceRetry is how soon prices not read from the APIs are read again.
const PriceRetry = time.Minute

// PriceStatus refreshes the instance types and prices when stale and says
// where the prices come from.
func (c *Cache) PriceStatus(ctx context.Context) PriceStatus {
	_, _ = c.Specs(ctx) // an error leaves the last status, which says why
	return c.Provider.Prices()
}
