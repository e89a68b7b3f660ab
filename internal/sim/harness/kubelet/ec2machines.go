package kubelet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// EC2API is what EC2Machines reads of an EC2 endpoint.
type EC2API interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeInstanceAttribute(ctx context.Context, in *ec2.DescribeInstanceAttributeInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceAttributeOutput, error)
	ModifyInstanceAttribute(ctx context.Context, in *ec2.ModifyInstanceAttributeInput, opts ...func(*ec2.Options)) (*ec2.ModifyInstanceAttributeOutput, error)
	AssociateIamInstanceProfile(ctx context.Context, in *ec2.AssociateIamInstanceProfileInput, opts ...func(*ec2.Options)) (*ec2.AssociateIamInstanceProfileOutput, error)
}

// IAMAPI is what EC2Machines reads of IAM: an instance profile's role.
type IAMAPI interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, opts ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
}

// EKSAPI is what EC2Machines reads of EKS: access entries.
type EKSAPI interface {
	DescribeAccessEntry(ctx context.Context, in *eks.DescribeAccessEntryInput, opts ...func(*eks.Options)) (*eks.DescribeAccessEntryOutput, error)
}

// EC2Machines are the instances of an AWS account reached over its API
// (moto, LocalStack, an account of one's own), for the simulated kubelets:
// each instance's user data (DescribeInstanceAttribute), its instance
// profile's role (IAM), and the EKS access entries. Refresh reads them;
// Instances returns what the last read found.
//
// The AMI family a node boots as comes from the cluster instead: its
// EC2NodeClass's (an endpoint's images say nothing of nodeadm or
// Bottlerocket).
type EC2Machines struct {
	EC2         EC2API
	IAM         IAMAPI
	EKS         EKSAPI
	Kube        client.Reader
	ClusterName string
	// CompleteLaunches plays EC2's part where an endpoint leaves it out:
	// moto's CreateFleet launches instances without the launch
	// template's security groups and instance profile, which EC2 gives
	// them. Before a nodewright instance's kubelet boots, it is given its
	// EC2NodeClass's security groups and instance profile (once: a later
	// change of the EC2NodeClass is drift, not corrected here).
	CompleteLaunches bool
	Log              logr.Logger

	mu        sync.Mutex
	instances []simaws.Instance
	userData  map[string]string // instance id → base64 user data
	roles     map[string]iamRole
	families  map[string]string // instance id → AMI family
	console   map[string]string
	completed map[string]bool
}

type iamRole struct{ name, arn string }

// Refresh reads the endpoint's instances.
func (m *EC2Machines) Refresh(ctx context.Context) error {
	found, err := m.describeInstances(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.userData == nil {
		m.userData, m.roles, m.families, m.console, m.completed = map[string]string{}, map[string]iamRole{}, map[string]string{}, map[string]string{}, map[string]bool{}
	}
	m.mu.Unlock()
	out := make([]simaws.Instance, 0, len(found))
	for _, inst := range found {
		if inst.Placement == nil || inst.State == nil {
			continue
		}
		mi, known, err := m.machine(ctx, inst)
		if err != nil {
			// One instance that cannot be read (a foreign one's profile
			// gone, a read racing its termination) holds up no other.
			m.Log.Error(err, "reading an instance for its kubelet", "instance", aws.ToString(inst.InstanceId))
			continue
		}
		if known {
			out = append(out, mi)
		}
	}
	m.mu.Lock()
	m.instances = out
	m.mu.Unlock()
	return nil
}

// describeInstances lists every instance of the endpoint.
func (m *EC2Machines) describeInstances(ctx context.Context) ([]ec2types.Instance, error) {
	var found []ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(m.EC2, &ec2.DescribeInstancesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the endpoint's instances: %w", err)
		}
		for _, r := range page.Reservations {
			found = append(found, r.Instances...)
		}
	}
	return found, nil
}

// machine is an instance with what its kubelet reads; not known yet
// while its NodeClaim, EC2NodeClass or role cannot be read (the cluster's
// cache has not caught up with a launch a moment old): its kubelet boots
// at a later refresh.
func (m *EC2Machines) machine(ctx context.Context, inst ec2types.Instance) (simaws.Instance, bool, error) {
	out := simaws.Instance{Instance: inst}
	if inst.State.Name != ec2types.InstanceStateNameRunning {
		return out, true, nil // no kubelet runs yet, or any more
	}
	ud, err := m.userDataOf(ctx, inst)
	if err != nil {
		return out, false, err
	}
	out.UserData = ud
	class, claimed, err := m.nodeClassOf(ctx, inst)
	if err != nil || (claimed && class == nil) {
		return out, false, err
	}
	if done, err := m.launchCompleted(ctx, inst, class, claimed); err != nil || !done {
		return out, false, err
	}
	m.setFamily(aws.ToString(inst.InstanceId), class)
	known, err := m.withRole(ctx, &out, class, claimed)
	return out, known, err
}

// userDataOf is the instance's base64 user data, read once and kept.
func (m *EC2Machines) userDataOf(ctx context.Context, inst ec2types.Instance) (string, error) {
	id := aws.ToString(inst.InstanceId)
	m.mu.Lock()
	ud, known := m.userData[id]
	m.mu.Unlock()
	if known {
		return ud, nil
	}
	attr, err := m.EC2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: inst.InstanceId, Attribute: ec2types.InstanceAttributeNameUserData})
	if err != nil {
		return "", fmt.Errorf("reading the user data of instance %s: %w", id, err)
	}
	if attr.UserData != nil {
		ud = aws.ToString(attr.UserData.Value)
	}
	m.mu.Lock()
	m.userData[id] = ud
	m.mu.Unlock()
	return ud, nil
}

// launchCompleted completes the launch of a nodewright instance of a
// NodeClaim when the endpoint leaves that to the simulator, and reports
// whether the instance is complete; other instances always are.
func (m *EC2Machines) launchCompleted(ctx context.Context, inst ec2types.Instance, class *awsv1.EC2NodeClass, claimed bool) (bool, error) {
	if !claimed || !m.CompleteLaunches || !provider.Owns(m.ClusterName, inst.Tags) {
		return true, nil
	}
	return m.complete(ctx, inst, class)
}

// setFamily records the AMI family of the instance's EC2NodeClass, Custom
// for an instance without one.
func (m *EC2Machines) setFamily(id string, class *awsv1.EC2NodeClass) {
	family := awsv1.AMIFamilyCustom
	if class != nil {
		family = nodeclass.Family(class)
	}
	m.mu.Lock()
	m.families[id] = family
	m.mu.Unlock()
}

// withRole gives the machine the instance profile and the role its kubelet
// authenticates as, and reports whether the machine is known: a claimed
// instance is not until its role can be read, an unclaimed one without a
// profile is, with none.
func (m *EC2Machines) withRole(ctx context.Context, out *simaws.Instance, class *awsv1.EC2NodeClass, claimed bool) (bool, error) {
	profile := profileOf(out.Instance, class)
	if profile == "" {
		return !claimed, nil
	}
	role, err := m.roleOf(ctx, profile)
	if err != nil || role.name == "" {
		return false, err
	}
	out.Profile, out.Role = profile, role.name
	return true, nil
}

// profileOf is the name of the instance's instance profile, else that of
// its EC2NodeClass.
func profileOf(inst ec2types.Instance, class *awsv1.EC2NodeClass) string {
	if p := inst.IamInstanceProfile; p != nil {
		arn := aws.ToString(p.Arn)
		return arn[strings.LastIndex(arn, "/")+1:]
	}
	if class != nil {
		return class.Status.InstanceProfile
	}
	return ""
}

// complete gives an instance its EC2NodeClass's security groups and
// instance profile where the endpoint launched it without; it reports
// whether the instance is complete (it is read again at the next refresh
// when it was changed).
func (m *EC2Machines) complete(ctx context.Context, inst ec2types.Instance, class *awsv1.EC2NodeClass) (bool, error) {
	id := aws.ToString(inst.InstanceId)
	m.mu.Lock()
	done := m.completed[id]
	m.mu.Unlock()
	if done {
		return true, nil
	}
	groupsChanged, err := m.completeSecurityGroups(ctx, inst, class)
	if err != nil {
		return false, err
	}
	profileChanged, err := m.completeProfile(ctx, inst, class)
	if err != nil {
		return false, err
	}
	if groupsChanged || profileChanged {
		return false, nil
	}
	m.mu.Lock()
	m.completed[id] = true
	m.mu.Unlock()
	return true, nil
}

// completeSecurityGroups gives the instance the EC2NodeClass's security
// groups when it has others, and reports whether it did.
func (m *EC2Machines) completeSecurityGroups(ctx context.Context, inst ec2types.Instance, class *awsv1.EC2NodeClass) (bool, error) {
	want := make([]string, 0, len(class.Status.SecurityGroups))
	for _, g := range class.Status.SecurityGroups {
		want = append(want, g.ID)
	}
	have := make([]string, 0, len(inst.SecurityGroups))
	for _, g := range inst.SecurityGroups {
		have = append(have, aws.ToString(g.GroupId))
	}
	slices.Sort(want)
	slices.Sort(have)
	if len(want) == 0 || slices.Equal(want, have) {
		return false, nil
	}
	if _, err := m.EC2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: inst.InstanceId, Groups: want}); err != nil {
		return false, fmt.Errorf("giving instance %s its security groups: %w", aws.ToString(inst.InstanceId), err)
	}
	return true, nil
}

// completeProfile gives an instance launched without an instance profile
// the EC2NodeClass's, and reports whether it did.
func (m *EC2Machines) completeProfile(ctx context.Context, inst ec2types.Instance, class *awsv1.EC2NodeClass) (bool, error) {
	if inst.IamInstanceProfile != nil || class.Status.InstanceProfile == "" {
		return false, nil
	}
	if _, err := m.EC2.AssociateIamInstanceProfile(ctx, &ec2.AssociateIamInstanceProfileInput{InstanceId: inst.InstanceId,
		IamInstanceProfile: &ec2types.IamInstanceProfileSpecification{Name: aws.String(class.Status.InstanceProfile)}}); err != nil {
		return false, fmt.Errorf("giving instance %s its instance profile: %w", aws.ToString(inst.InstanceId), err)
	}
	return true, nil
}

// nodeClassOf is the EC2NodeClass the instance's tag names; claimed says
// the instance names one (nil class: not readable yet). The class is read
// from the tag nodewright launches every instance with: the NodeClaim tag
// of a launch batch's instance names its NodeClaim only later.
func (m *EC2Machines) nodeClassOf(ctx context.Context, inst ec2types.Instance) (*awsv1.EC2NodeClass, bool, error) {
	name := ""
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == awsv1.LabelEC2NodeClass {
			name = aws.ToString(t.Value)
		}
	}
	if name == "" {
		return nil, false, nil
	}
	class := &awsv1.EC2NodeClass{}
	if err := m.Kube.Get(ctx, client.ObjectKey{Name: name}, class); err != nil || class.Status.InstanceProfile == "" {
		return nil, true, client.IgnoreNotFound(err)
	}
	return class, true, nil
}

func (m *EC2Machines) roleOf(ctx context.Context, profile string) (iamRole, error) {
	m.mu.Lock()
	r, known := m.roles[profile]
	m.mu.Unlock()
	if known {
		return r, nil
	}
	out, err := m.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	if err != nil {
		return r, fmt.Errorf("reading instance profile %s: %w", profile, err)
	}
	for _, role := range out.InstanceProfile.Roles {
		r = iamRole{name: aws.ToString(role.RoleName), arn: aws.ToString(role.Arn)}
	}
	if r.name != "" { // a profile just made may have no role yet
		m.mu.Lock()
		m.roles[profile] = r
		m.mu.Unlock()
	}
	return r, nil
}

// Instances are the instances the last Refresh found.
func (m *EC2Machines) Instances() []simaws.Instance {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]simaws.Instance, len(m.instances))
	for i, inst := range m.instances {
		inst.ConsoleOutput = m.console[aws.ToString(inst.InstanceId)]
		out[i] = inst
	}
	return out
}

// SetConsoleOutput keeps what an instance's kubelet printed (an endpoint
// takes no console output).
func (m *EC2Machines) SetConsoleOutput(id, output string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.console == nil {
		m.console = map[string]string{}
	}
	m.console[id] = output
}

// Family is the AMI family of the instance's EC2NodeClass (Custom without one).
func (m *EC2Machines) Family(inst simaws.Instance) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.families[aws.ToString(inst.InstanceId)]; ok {
		return f
	}
	return awsv1.AMIFamilyCustom
}

// RoleARN is the ARN IAM gave the role.
func (m *EC2Machines) RoleARN(role string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.roles {
		if r.name == role {
			return r.arn
		}
	}
	return "arn:aws:iam::unknown:role/" + role
}

// AccessEntryType asks EKS for the principal's access entry; an endpoint
// without access entries (moto has none) has no entry for anyone.
func (m *EC2Machines) AccessEntryType(principalARN string) (string, bool) {
	if m.EKS == nil {
		return "", false
	}
	out, err := m.EKS.DescribeAccessEntry(context.Background(), &eks.DescribeAccessEntryInput{ClusterName: aws.String(m.ClusterName), PrincipalArn: aws.String(principalARN)})
	if err != nil || out.AccessEntry == nil {
		return "", false
	}
	return aws.ToString(out.AccessEntry.Type), true
}

var _ Machines = (*EC2Machines)(nil)
var _ Machines = (*simaws.Account)(nil)
