package nodepoolhealth

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// DefaultDriftFailureLimit is how many replacements of a NodePool's
// drifted nodes may fail in a row before its drift pauses.
const DefaultDriftFailureLimit = 3

// DriftReplacements (nil: records nothing) remembers, per NodePool, how many replacements of
// drifted nodes failed in a row (to launch, register or initialize), when
// the last did and why. Disruption records outcomes; the NodePool
// controller, the only writer of NodePool status, pauses drift there
// (status.driftBackoff, DriftAllowed=False) and takes the count up again
// from there after a restart.
type DriftReplacements struct {
	mu    sync.Mutex
	pools map[string]DriftRecord
}

// DriftRecord is a NodePool's replacements of drifted nodes.
type DriftRecord struct {
	Failures int
	Last     time.Time
	Cause    string
}

// NewDriftReplacements makes an empty record.
func NewDriftReplacements() *DriftReplacements {
	return &DriftReplacements{pools: map[string]DriftRecord{}}
}

// Record notes a replacement of one of the NodePool's drifted nodes that
// succeeded, or failed with a cause; it reports whether anything changed.
func (d *DriftReplacements) Record(pool string, now time.Time, ok bool, cause string) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, known := d.pools[pool]
	if ok {
		if known && cur.Failures == 0 {
			return false
		}
		d.pools[pool] = DriftRecord{}
		return true
	}
	d.pools[pool] = DriftRecord{Failures: cur.Failures + 1, Last: now, Cause: cause}
	return true
}

// Get is what is known of the NodePool.
func (d *DriftReplacements) Get(pool string) (DriftRecord, bool) {
	if d == nil {
		return DriftRecord{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.pools[pool]
	return r, ok
}

// Reset forgets the NodePool's failures: its drift resumes.
func (d *DriftReplacements) Reset(pool string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pools[pool] = DriftRecord{}
}

// RestoreFrom takes up the failures in a NodePool's status, unless
// something has been recorded since this process started.
func (d *DriftReplacements) RestoreFrom(np *v1.NodePool) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, known := d.pools[np.Name]; !known && np.Status.DriftBackoff != nil {
		b := np.Status.DriftBackoff
		d.pools[np.Name] = DriftRecord{Failures: int(b.Failures), Last: b.LastFailure.Time, Cause: b.Cause}
	}
}

// PausedDrift are the NodePools whose drift is paused, with why: those
// whose status says so (DriftAllowed=False), and those whose failures
// in records (nil offline) reached limit before their status says so.
func PausedDrift(pools map[string]*v1.NodePool, records *DriftReplacements, limit int) map[string]string {
	if limit <= 0 {
		limit = DefaultDriftFailureLimit
	}
	out := map[string]string{}
	for name, np := range pools {
		if c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionDriftAllowed); c != nil && c.Status == metav1.ConditionFalse {
			out[name] = c.Message
			continue
		}
		if records == nil {
			continue
		}
		if rec, ok := records.Get(name); ok && rec.Failures >= limit {
			out[name] = fmt.Sprintf("%d replacements of drifted nodes failed in a row; the last: %s", rec.Failures, rec.Cause)
		}
	}
	return out
}
