package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// TagLaunchBatch tags the instances of a launch batch with the batch's ID.
// Until an instance is given to a NodeClaim, its karpenter.sh/nodeclaim
// tag is Untaken(ID), which no NodeClaim's name can be (names have no /).
const TagLaunchBatch = "nodewright.dev/launch-batch"

// Untaken is the karpenter.sh/nodeclaim tag of a launch batch's instance
// no NodeClaim has taken yet.
func Untaken(batch string) string { return "launch-batch/" + batch }

// batchTTL is how long a launch batch is remembered after a member last
// asked for its instance; a member asking later reads it again.
const batchTTL = time.Hour

// Recorded are the instances of a launch batch its NodeClaims recorded as
// theirs (status.providerID): instance ID → NodeClaim name.
type Recorded func(ctx context.Context, batch string) (map[string]string, error)

// batches are the launch batches this process has launched or read.
type batches struct {
	mu   sync.Mutex
	byID map[string]*launchBatch
}

// launchBatch is one launch batch's instances and which NodeClaim holds
// each. Its members choose their instances one at a time, under its lock.
type launchBatch struct {
	mu       sync.Mutex
	loadedAt time.Time
	usedAt   time.Time
	// instances are the batch's live instances by ID; individually: the
	// batch launched none for want of capacity, and its members launch
	// on their own.
	instances    map[string]ec2types.Instance
	individually bool
	// held are the instances a NodeClaim holds, by ID: recorded on it or
	// tagged with its name when the batch was loaded, or chosen by it in
	// this process since (kept while the batch is: a choice is recorded
	// only once its launch returns).
	held map[string]string
}

func (b *batches) get(id string, now time.Time) *launchBatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = map[string]*launchBatch{}
	}
	for k, lb := range b.byID {
		if lb.mu.TryLock() {
			if !lb.usedAt.IsZero() && now.Sub(lb.usedAt) > batchTTL {
				delete(b.byID, k)
			}
			lb.mu.Unlock()
		}
	}
	lb := b.byID[id]
	if lb == nil {
		lb = &launchBatch{}
		b.byID[id] = lb
	}
	return lb
}

// holder is the NodeClaim an instance of the batch is tagged with ("":
// none yet).
func holder(inst ec2types.Instance, batch string) string {
	if name := tagValue(inst.Tags, TagNodeClaim); name != Untaken(batch) {
		return name
	}
	return ""
}

// createInBatch gives a NodeClaim of a launch batch its instance: the
// batch's instances are launched by the first member to ask (one fleet of
// the batch's size, with the batch's ID as client token), or read again
// (a later member, or after a restart); the NodeClaim takes the instance
// it holds, else the first one no NodeClaim holds. Nothing is written:
// the NodeClaim records its instance (status.providerID) once this
// returns, and garbage collection tags the instance with it later. A
// restart between the choice and the record finds the instance held by
// no one, and chooses again. handled is false when the batch launched
// nothing for want of capacity: the NodeClaim then launches on its own.
func (p *Launcher) createInBatch(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType,
	batch cloudprovider.LaunchBatch) (_ *cloudprovider.Instance, handled bool, _ error) {
	now := p.clock.Now()
	lb := p.batches.get(batch.ID, now)
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.usedAt = now
	if lb.loadedAt.IsZero() {
		if err := p.loadBatch(ctx, lb, claim, class, types, batch); err != nil {
			return nil, true, err
		}
	}
	if lb.individually {
		return nil, false, nil
	}
	id := lb.choose(claim.Name)
	if id == "" {
		return nil, true, &cloudprovider.InsufficientCapacityError{Message: fmt.Sprintf("launch batch %s of %d NodeClaims got %d instances, every one held by another NodeClaim",
			batch.ID, batch.Size, len(lb.instances))}
	}
	inst := instanceOf(lb.instances[id], types)
	inst.NodeClaim = claim.Name
	return inst, true, nil
}

// choose is the instance a NodeClaim holds, else the first one no
// NodeClaim holds in ID order, which it then holds ("": none).
func (lb *launchBatch) choose(claim string) string {
	ids := slices.Sorted(maps.Keys(lb.instances))
	if i := slices.IndexFunc(ids, func(id string) bool { return lb.held[id] == claim }); i >= 0 {
		return ids[i]
	}
	i := slices.IndexFunc(ids, func(id string) bool { return lb.held[id] == "" })
	if i < 0 {
		return ""
	}
	lb.held[ids[i]] = claim
	return ids[i]
}

// TagHolder writes on an instance of a launch batch the NodeClaim that
// recorded it: its karpenter.sh/nodeclaim tag, and its Name tag when that
// still names the batch. Calls are paced under EC2's request limit for
// CreateTags (tagRequestsPerSecond); one that would wait past ctx's
// deadline returns a cloudprovider.RetryLaterError and sends nothing.
func (p *Launcher) TagHolder(ctx context.Context, inst *cloudprovider.Instance, claim string) error {
	tags := map[string]string{TagNodeClaim: claim}
	if inst.Name == nodeNameTag(inst.NodePool, Untaken(inst.LaunchBatch)) {
		tags["Name"] = nodeNameTag(inst.NodePool, claim)
	}
	if err := p.tagging.Wait(ctx); err != nil {
		return &cloudprovider.RetryLaterError{After: tagRetry, Message: fmt.Sprintf("instance %s of NodeClaim %s waits its turn to be tagged: nodewright paces CreateTags at %d a second, under EC2's request limit for it",
			inst.InstanceID, claim, tagRequestsPerSecond)}
	}
	list := tagSpecifications(tags, ec2types.ResourceTypeInstance)[0].Tags
	if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{inst.InstanceID}, Tags: list}); err != nil {
		return fmt.Errorf("tagging instance %s of launch batch %s with its NodeClaim %s: %w", inst.InstanceID, inst.LaunchBatch, claim, err)
	}
	return nil
}

// loadBatch launches the batch's instances, or finds them: EC2 answers a
// client token it has seen with that call's result, and a token seen with
// another request (the offerings or subnets changed since) with
// IdempotentParameterMismatch, after which the batch's instances are
// found by its tag.
func (p *Launcher) loadBatch(ctx context.Context, lb *launchBatch, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType,
	batch cloudprovider.LaunchBatch) error {
	l, err := p.plan(ctx, claim, class, types)
	if err != nil {
		return err
	}
	ids, launchErr, err := p.launchBatch(ctx, l, batch)
	if err != nil {
		return err
	}
	instances, err := p.batchInstances(ctx, batch.ID, ids)
	if err != nil {
		return err
	}
	held, err := p.heldIn(ctx, batch.ID, instances)
	if err != nil {
		return err
	}
	lb.instances, lb.held, lb.loadedAt = instances, held, p.clock.Now()
	if len(instances) == 0 && launchErr != nil {
		if !cloudprovider.IsInsufficientCapacity(launchErr) {
			lb.loadedAt = time.Time{}
			return launchErr
		}
		lb.individually = true
	}
	return nil
}

// heldIn are the batch's instances held by a NodeClaim: tagged with its
// name, or recorded on it.
func (p *Launcher) heldIn(ctx context.Context, batch string, instances map[string]ec2types.Instance) (map[string]string, error) {
	held := map[string]string{}
	for id, inst := range instances {
		if name := holder(inst, batch); name != "" {
			held[id] = name
		}
	}
	if p.Recorded == nil || len(instances) == 0 {
		return held, nil
	}
	recorded, err := p.Recorded(ctx, batch)
	if err != nil {
		return nil, fmt.Errorf("reading which NodeClaims of launch batch %s hold an instance: %w", batch, err)
	}
	for id, name := range recorded {
		if _, ok := instances[id]; ok {
			held[id] = name
		}
	}
	return held, nil
}

// launchBatch asks EC2 for the batch's fleet and returns the instances it
// launched, or why it launched none (launchErr: no capacity, no offering
// left); no ids and no error after IdempotentParameterMismatch (launched
// before, with a request that differs from this one).
func (p *Launcher) launchBatch(ctx context.Context, l *launchPlan, batch cloudprovider.LaunchBatch) (ids []string, launchErr, err error) {
	configs, err := l.configs(ctx, p)
	if err != nil {
		return nil, nil, fmt.Errorf("launching NodeClaim %s: %w", l.claim.Name, err)
	}
	if len(configs) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{Message: fmt.Sprintf("no %s offering of NodeClaim %s's instance types is available in a zone with a subnet",
			l.capacityType, l.claim.Name)}, nil
	}
	in := l.fleetInput(p.batchTags(l.claim, l.class, batch), batch.ID, configs)
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(int32(batch.Size)) //nolint:gosec // at most MaxLaunchBatch
	out, err := p.createFleet(ctx, l, in)
	if hasCode(err, "IdempotentParameterMismatch") {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, group := range out.Instances {
		ids = append(ids, group.InstanceIds...)
	}
	if _, err := p.launched(l, out); err != nil && len(ids) == 0 {
		launchErr = err
	}
	return ids, launchErr, nil
}

// batchInstances reads the batch's live instances: those launched (ids),
// or, without ids, those tagged with the batch.
func (p *Launcher) batchInstances(ctx context.Context, batch string, ids []string) (map[string]ec2types.Instance, error) {
	in := &ec2.DescribeInstancesInput{InstanceIds: ids}
	if len(ids) == 0 {
		in.Filters = append(p.ownedFilters(), ec2types.Filter{Name: aws.String("tag:" + TagLaunchBatch), Values: []string{batch}})
	}
	out := map[string]ec2types.Instance{}
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the instances of launch batch %s: %w", batch, err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				if live(inst) && p.owns(inst.Tags) && tagValue(inst.Tags, TagLaunchBatch) == batch {
					out[aws.ToString(inst.InstanceId)] = inst
				}
			}
		}
	}
	return out, nil
}

// live reports an instance neither shutting down nor terminated.
func live(inst ec2types.Instance) bool {
	return inst.State == nil || (inst.State.Name != ec2types.InstanceStateNameTerminated && inst.State.Name != ec2types.InstanceStateNameShuttingDown)
}

// batchTags are the tags a launch batch's instances launch with: a
// NodeClaim's, with Untaken(ID) for the NodeClaim until one takes the
// instance.
func (p *Launcher) batchTags(claim *v1.NodeClaim, class *awsv1.EC2NodeClass, batch cloudprovider.LaunchBatch) map[string]string {
	tags := p.tags(claim, class)
	tags[TagNodeClaim] = Untaken(batch.ID)
	tags[TagLaunchBatch] = batch.ID
	if tags["Name"] == nodeNameTag(claim.Labels[v1.LabelNodePool], claim.Name) {
		tags["Name"] = nodeNameTag(claim.Labels[v1.LabelNodePool], Untaken(batch.ID))
	}
	return tags
}

// nodeNameTag is the Name tag of a NodeClaim's instance: NODEPOOL/NODECLAIM.
func nodeNameTag(pool, claim string) string { return pool + "/" + claim }
