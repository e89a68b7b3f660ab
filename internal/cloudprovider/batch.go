package cloudprovider

import (
	"fmt"
	"strconv"
	"strings"
)

// AnnotationLaunchBatch marks, on a NodeClaim, the launch batch it belongs
// to: "ID/SIZE". The NodeClaims of a plan that would launch identically
// are one batch, written on each when it is created: the cloud launches
// the batch's SIZE instances in one call, made idempotent by the batch's
// ID, and gives each NodeClaim one of them. Because the membership is
// written before any call, a restart between the call and the NodeClaims
// recording their instances finds the same instances instead of launching
// again.
const AnnotationLaunchBatch = "nodewright.dev/launch-batch"

// MaxLaunchBatch is the most NodeClaims one launch batch holds.
const MaxLaunchBatch = 100

// LaunchBatch is a NodeClaim's launch batch.
type LaunchBatch struct {
	ID   string
	Size int
}

// String is the annotation's value.
func (b LaunchBatch) String() string { return b.ID + "/" + strconv.Itoa(b.Size) }

// LaunchBatchOf reads a NodeClaim's launch batch from its annotations:
// false when it has none.
func LaunchBatchOf(claim string, annotations map[string]string) (LaunchBatch, bool, error) {
	value, ok := annotations[AnnotationLaunchBatch]
	if !ok {
		return LaunchBatch{}, false, nil
	}
	id, size, found := strings.Cut(value, "/")
	n, err := strconv.Atoi(size)
	if !found || id == "" || err != nil || n < 1 || n > MaxLaunchBatch {
		return LaunchBatch{}, false, fmt.Errorf("NodeClaim %s: annotation %s=%q is not the ID/SIZE nodewright writes; delete the NodeClaim and nodewright decides anew", claim, AnnotationLaunchBatch, value)
	}
	return LaunchBatch{ID: id, Size: n}, true, nil
}

// Holder is the NodeClaim an instance is terminated for: the instance's
// own NodeClaim tag must name it (or, for a launch batch's instance not
// tagged yet, the batch must be the NodeClaim's), so a status.providerID
// edited to point at another instance terminates nothing. The zero Holder
// is a termination for no NodeClaim (an instance no NodeClaim records, a
// node without a NodeClaim).
type Holder struct {
	NodeClaim   string
	LaunchBatch string
}

// HolderOf is the Holder for a NodeClaim of this name and annotations.
func HolderOf(name string, annotations map[string]string) Holder {
	b, _, _ := LaunchBatchOf(name, annotations)
	return Holder{NodeClaim: name, LaunchBatch: b.ID}
}
