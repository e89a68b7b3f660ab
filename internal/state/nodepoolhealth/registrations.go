package nodepoolhealth

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// Registrations remembers, per NodePool, how many NodeClaims in a row
// timed out before their node registered, and when the last did: the
// state of the relaunch backoff. The lifecycle records outcomes; the
// NodePool controller, the only writer of NodePool status, shows them
// there (status.registrationBackoff and the NodeRegistrationHealthy
// condition) and takes them up again from there after a restart.
type Registrations struct {
	mu    sync.Mutex
	pools map[string]Registration
	// counted are the NodeClaims whose timeouts are counted in pools,
	// per NodePool: a NodeClaim reconciled again before its deletion
	// reached the cache times out once.
	counted map[string]sets.Set[string]
}

// Registration is what is known of a NodePool's registrations: how many
// NodeClaims in a row timed out before their node registered, when the
// last did, and the likely cause.
type Registration struct {
	Failures int
	Last     time.Time
	Cause    string
}

// NewRegistrations makes an empty record.
func NewRegistrations() *Registrations {
	return &Registrations{pools: map[string]Registration{}, counted: map[string]sets.Set[string]{}}
}

// Registered notes a node of the NodePool registering, which ends its
// backoff. It reports whether anything changed.
func (r *Registrations) Registered(pool string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.counted, pool)
	if cur, known := r.pools[pool]; known && cur.Failures == 0 {
		return false
	}
	r.pools[pool] = Registration{}
	return true
}

// TimedOut notes the NodePool's NodeClaim claim timing out unregistered,
// with the likely cause. A NodeClaim counts once however often it is
// told; it reports whether anything changed.
func (r *Registrations) TimedOut(pool, claim string, now time.Time, cause string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counted[pool].Has(claim) {
		return false
	}
	if r.counted[pool] == nil {
		r.counted[pool] = sets.New[string]()
	}
	r.counted[pool].Insert(claim)
	r.pools[pool] = Registration{Failures: r.pools[pool].Failures + 1, Last: now, Cause: cause}
	return true
}

// Restore takes up a backoff recorded before this process started, unless
// something has been recorded since.
func (r *Registrations) Restore(pool string, failures int, last time.Time, cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, known := r.pools[pool]; !known && failures > 0 {
		r.pools[pool] = Registration{Failures: failures, Last: last, Cause: cause}
	}
}

// RestoreFrom takes up the backoff in a NodePool's status (see Restore).
func (r *Registrations) RestoreFrom(np *v1.NodePool) {
	if b := np.Status.RegistrationBackoff; b != nil {
		r.Restore(np.Name, int(b.Failures), b.LastTimeout.Time, b.Cause)
	}
}

// Backoffs are the backoffs of the NodePools this process knows of (a
// zero Until for those whose last node registered); a NodePool it does
// not know of backs off as its status says.
func (r *Registrations) Backoffs() map[string]state.Backoff {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]state.Backoff, len(r.pools))
	for pool, reg := range r.pools {
		b := state.Backoff{Failures: reg.Failures}
		if reg.Failures > 0 {
			b.Until = reg.Last.Add(Backoff(reg.Failures))
		}
		out[pool] = b
	}
	return out
}

// Get returns what is known of a NodePool's registrations.
func (r *Registrations) Get(pool string) (Registration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.pools[pool]
	return reg, ok
}

// Backoff is how long after its last registration timeout a NodePool with
// failures consecutive timeouts waits before launching again: one minute,
// doubling, at most an hour.
func Backoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := time.Minute << min(failures-1, 6)
	return min(d, time.Hour)
}
