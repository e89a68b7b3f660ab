package provider

import (
	"cmp"
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

// batchTTL is how long a launch batch's instances are remembered after
// its launch; a member asking later reads them from EC2 again.
const batchTTL = time.Hour

// batches are the launch batches this process has launched or read.
type batches struct {
	mu   sync.Mutex
	byID map[string]*launchBatch
}

// launchBatch is one launch batch's instances and which NodeClaim holds
// each. Its members choose their instances one at a time, and tag them
// at once.
type launchBatch struct {
	mu       sync.Mutex
	loadedAt time.Time
	// instances are the batch's live instances by ID; individually: the
	// batch launched none for want of capacity, and its members launch
	// on their own.
	instances    map[string]ec2types.Instance
	individually bool
	// chosen are the instances chosen by a NodeClaim whose tag on the
	// instance is being written: no other member chooses them.
	chosen map[string]string // instance ID → NodeClaim
}

func (b *batches) get(id string, now time.Time) *launchBatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = map[string]*launchBatch{}
	}
	for k, lb := range b.byID {
		if lb.mu.TryLock() {
			if !lb.loadedAt.IsZero() && now.Sub(lb.loadedAt) > batchTTL {
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

// holder is the NodeClaim an instance of the batch was given to ("": none
// yet).
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
// tagged with its name, else the first free one, which is tagged with its
// name before it is returned. handled is false when the batch launched
// nothing for want of capacity: the NodeClaim then launches on its own.
func (p *Launcher) createInBatch(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType,
	batch cloudprovider.LaunchBatch) (_ *cloudprovider.Instance, handled bool, _ error) {
	lb := p.batches.get(batch.ID, p.clock.Now())
	id, inst, handled, err := p.chooseInBatch(ctx, lb, claim, class, types, batch)
	if id == "" {
		return nil, handled, err
	}
	// Tagged outside the batch's lock: its members write their tags at
	// once, not one after another (CreateTags is one call per tag value).
	inst, err = p.take(ctx, inst, claim, batch.ID)
	lb.mu.Lock()
	defer lb.mu.Unlock()
	delete(lb.chosen, id)
	if err != nil {
		return nil, true, err
	}
	lb.instances[id] = inst
	return instanceOf(inst, types), true, nil
}

// chooseInBatch loads the batch when no member has (launching it, or
// reading it after a restart) and chooses the NodeClaim's instance: id
// is "" when the batch has none for it (handled false: the batch launched
// nothing for want of capacity, and the NodeClaim launches on its own).
func (p *Launcher) chooseInBatch(ctx context.Context, lb *launchBatch, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType,
	batch cloudprovider.LaunchBatch) (id string, _ ec2types.Instance, handled bool, _ error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.loadedAt.IsZero() {
		if err := p.loadBatch(ctx, lb, claim, class, types, batch); err != nil {
			return "", ec2types.Instance{}, true, err
		}
	}
	if lb.individually {
		return "", ec2types.Instance{}, false, nil
	}
	id = lb.choose(claim.Name, batch.ID)
	if id == "" {
		return "", ec2types.Instance{}, true, &cloudprovider.InsufficientCapacityError{Message: fmt.Sprintf("launch batch %s of %d NodeClaims got %d instances, every one held by another NodeClaim",
			batch.ID, batch.Size, len(lb.instances))}
	}
	if lb.chosen == nil {
		lb.chosen = map[string]string{}
	}
	lb.chosen[id] = claim.Name
	return id, lb.instances[id], true, nil
}

// choose is the instance a NodeClaim holds (tagged with its name, or
// chosen by it), else the first free one, in ID order ("": none).
func (lb *launchBatch) choose(claim, batch string) string {
	ids := slices.Sorted(maps.Keys(lb.instances))
	holderOf := func(id string) string { return cmp.Or(lb.chosen[id], holder(lb.instances[id], batch)) }
	if i := slices.IndexFunc(ids, func(id string) bool { return holderOf(id) == claim }); i >= 0 {
		return ids[i]
	}
	if i := slices.IndexFunc(ids, func(id string) bool { return holderOf(id) == "" }); i >= 0 {
		return ids[i]
	}
	return ""
}

// take tags a free instance of the batch with the NodeClaim's name (and
// its Name tag, when it still says untaken) in EC2, and returns it so
// tagged.
func (p *Launcher) take(ctx context.Context, inst ec2types.Instance, claim *v1.NodeClaim, batch string) (ec2types.Instance, error) {
	if holder(inst, batch) != "" {
		return inst, nil
	}
	id := aws.ToString(inst.InstanceId)
	tags := map[string]string{TagNodeClaim: claim.Name}
	if tagValue(inst.Tags, "Name") == nodeNameTag(claim.Labels[v1.LabelNodePool], Untaken(batch)) {
		tags["Name"] = nodeNameTag(claim.Labels[v1.LabelNodePool], claim.Name)
	}
	list := tagSpecifications(tags, ec2types.ResourceTypeInstance)[0].Tags
	if !p.tagging.TryAccept() {
		return inst, &cloudprovider.RetryLaterError{After: tagRetry,
			Message: fmt.Sprintf("NodeClaim %s waits its turn to tag its instance of launch batch %s: nodewright paces CreateTags at %d a second, under EC2's request limit for it",
				claim.Name, batch, tagRequestsPerSecond)}
	}
	if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: list}); err != nil {
		return inst, fmt.Errorf("launching NodeClaim %s: tagging instance %s of launch batch %s with it: %w", claim.Name, id, batch, err)
	}
	inst.Tags = withTags(inst.Tags, list)
	return inst, nil
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
	lb.instances, lb.loadedAt = instances, p.clock.Now()
	if len(instances) == 0 && launchErr != nil {
		if !cloudprovider.IsInsufficientCapacity(launchErr) {
			lb.loadedAt = time.Time{}
			return launchErr
		}
		lb.individually = true
	}
	return nil
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

// withTags is tags with set's keys set to set's values.
func withTags(tags, set []ec2types.Tag) []ec2types.Tag {
	out := slices.DeleteFunc(slices.Clone(tags), func(t ec2types.Tag) bool {
		return slices.ContainsFunc(set, func(s ec2types.Tag) bool { return aws.ToString(s.Key) == aws.ToString(t.Key) })
	})
	return append(out, set...)
}
