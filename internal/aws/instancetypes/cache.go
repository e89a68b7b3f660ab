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
	return specs, nil
}
