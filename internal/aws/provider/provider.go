// Package provider launches, finds and terminates the EC2 instances of
// NodeClaims through the narrow SDK interfaces, so the simulated account
// runs the same code as AWS. One file per operation: create.go (one
// CreateFleet per NodeClaim), batch.go (one per batch of identical
// NodeClaims), offerings.go and launchtemplate.go (what a launch asks
// for), get.go (DescribeInstances), delete.go, reboot.go; cloud.go is the
// controllers' CloudProvider over them.
package provider

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// UnavailableOfferingTTL is how long an offering that ran out of capacity
// is not tried again.
const UnavailableOfferingTTL = 3 * time.Minute

// Launcher launches, reads and terminates EC2 instances for NodeClaims: the AWS side of CloudProvider.
type Launcher struct {
	ec2         sdk.EC2
	resolver    *nodeclass.Resolver
	cluster     userdata.Cluster
	unavailable *unavailableOfferings
	clock       clock.PassiveClock
	// templates are the launch templates known to exist, by name (their
	// content is in their name): a launch uses one without describing
	// it. A launch that finds one gone forgets it and makes it again.
	templates sync.Map
	// batches are the launch batches launched or read.
	batches batches
	// tagging paces CreateTags (see tagRequestsPerSecond).
	tagging flowcontrol.RateLimiter
	// Recorded reads which instances of a launch batch its NodeClaims
	// recorded, when this process loads the batch (nil: none did).
	Recorded Recorded
	// Specs are the instance types' specifications, to evaluate
	// spec.kubelet's expressions for the types launched (the embedded
	// catalog when nil).
	Specs func(context.Context) ([]instancetypes.Spec, error)
}

// New returns the launcher of a cluster.
func New(ec2API sdk.EC2, resolver *nodeclass.Resolver, cluster userdata.Cluster, c clock.PassiveClock) *Launcher {
	return &Launcher{ec2: ec2API, resolver: resolver, cluster: cluster, unavailable: newUnavailableOfferings(c, UnavailableOfferingTTL), clock: c,
		tagging: flowcontrol.NewTokenBucketRateLimiter(tagRequestsPerSecond, tagBurst)}
}

// tagRequestsPerSecond and tagBurst pace this process's CreateTags calls
// (the NodeClaim tags of launch batches' instances, written after their
// launch) below EC2's default bucket for the action (100 requests,
// refilled at 10 a second), leaving a tenth to the account's other
// callers; a caller that cannot wait for its turn is told to come back
// after tagRetry.
const (
	tagRequestsPerSecond = 9
	tagBurst             = 90
	tagRetry             = time.Second
)

// SetUnavailableOfferingTTL sets how long an offering that ran out of
// capacity is left out (UnavailableOfferingTTL by default).
func (p *Launcher) SetUnavailableOfferingTTL(ttl time.Duration) {
	p.unavailable.mu.Lock()
	defer p.unavailable.mu.Unlock()
	p.unavailable.ttl = ttl
}
