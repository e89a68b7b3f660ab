package provider

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// unavailableOfferings remembers offerings ("spot:m5.large:us-east-1a")
// that recently failed for lack of capacity, for a fixed time.
type unavailableOfferings struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	ttl   time.Duration
	until map[string]time.Time
}

func newUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *unavailableOfferings {
	return &unavailableOfferings{clock: c, ttl: ttl, until: map[string]time.Time{}}
}

func offeringKey(capacityType, instanceType, zone string) string {
	return capacityType + ":" + instanceType + ":" + zone
}

func (u *unavailableOfferings) mark(capacityType, instanceType, zone string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[offeringKey(capacityType, instanceType, zone)] = u.clock.Now().Add(u.ttl)
}

// current returns the offerings unavailable now (nil when none).
func (u *unavailableOfferings) current() map[string]bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out map[string]bool
	now := u.clock.Now()
	for key, t := range u.until {
		if !now.Before(t) {
			delete(u.until, key)
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[key] = true
	}
	return out
}

func (u *unavailableOfferings) isUnavailable(capacityType, instanceType, zone string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	key := offeringKey(capacityType, instanceType, zone)
	t, ok := u.until[key]
	if ok && !u.clock.Now().Before(t) {
		delete(u.until, key)
		return false
	}
	return ok
}

// MarkUnavailable keeps an offering out of launches and plans for
// UnavailableOfferingTTL, as a launch failing for lack of capacity does:
// an interrupted spot offering, a reclaimed reservation.
func (p *Launcher) MarkUnavailable(capacityType, instanceType, zone string) {
	p.unavailable.mark(capacityType, instanceType, zone)
}

// insufficientCapacityCodes are the fleet error codes that mean "no
// capacity in this offering now".
var insufficientCapacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"MaxSpotInstanceCountExceeded":      true,
	"VcpuLimitExceeded":                 true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true,
	"InsufficientFreeAddressesInSubnet": true,
	"ReservationCapacityExceeded":       true,
}
