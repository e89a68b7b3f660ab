// Command dynamicdriftoracle tells, for each case it reads (one JSON
// object a line), the Drifted condition the reference's NodeClaim
// disruption controller (core's Drift reconciler over the AWS provider's
// CloudProvider.IsDrifted) writes on a launched NodeClaim. The cluster is
// a controller-runtime fake client holding the case's NodePool,
// EC2NodeClass and NodeClaim; what the account would answer (the
// instance, the NodeClass's instance types, its placement group) is the
// case's. One JSON object a line: the reason, or the error the reconcile
// returned.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	awscloudprovider "github.com/aws/karpenter-provider-aws/pkg/cloudprovider"
	awsoptions "github.com/aws/karpenter-provider-aws/pkg/operator/options"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instance"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	"github.com/aws/karpenter-provider-aws/pkg/providers/placementgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/disruption"
	"sigs.k8s.io/karpenter/pkg/events"
	coreoptions "sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

type offering struct {
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Available    bool                             `json:"available"`
}

type instanceType struct {
	Name         string                           `json:"name"`
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Offerings    []offering                       `json:"offerings"`
}

type ec2Instance struct {
	ID                    string   `json:"id"`
	SubnetID              string   `json:"subnetID"`
	SecurityGroupIDs      []string `json:"securityGroupIDs"`
	CapacityReservationID string   `json:"capacityReservationID"`
}

type input struct {
	Now              time.Time          `json:"now"`
	NodePool         karpv1.NodePool    `json:"nodePool"`
	NodeClass        awsv1.EC2NodeClass `json:"nodeClass"`
	NodeClaim        karpv1.NodeClaim   `json:"nodeClaim"`
	Instance         *ec2Instance       `json:"instance"`
	InstanceTypes    []instanceType     `json:"instanceTypes"`
	PlacementGroupID string             `json:"placementGroupID"`
}

type output struct {
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// The account, as the case says it is.
type types struct{ list []*cloudprovider.InstanceType }

func (t types) Get(_ context.Context, _ instancetype.NodeClass, name ec2types.InstanceType) (*cloudprovider.InstanceType, error) {
	for _, it := range t.list {
		if it.Name == string(name) {
			return it, nil
		}
	}
	return nil, fmt.Errorf("no instance type %s", name)
}
func (t types) List(context.Context, instancetype.NodeClass) ([]*cloudprovider.InstanceType, error) {
	return t.list, nil
}
func (t types) FilterForNodeClass(_ context.Context, its []*cloudprovider.InstanceType, _ instancetype.NodeClass) []*cloudprovider.InstanceType {
	return its
}
func (t types) ValidateKubeletExpressions(context.Context, instancetype.NodeClass) error { return nil }

type instances struct{ inst *ec2Instance }

func (i instances) Get(_ context.Context, id string, _ ...instance.Options) (*instance.Instance, error) {
	if i.inst == nil || i.inst.ID != id {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
	}
	out := &instance.Instance{ID: i.inst.ID, SubnetID: i.inst.SubnetID, SecurityGroupIDs: i.inst.SecurityGroupIDs}
	if i.inst.CapacityReservationID != "" {
		out.CapacityReservationDetails = &instance.CapacityReservationDetails{ID: i.inst.CapacityReservationID, Type: awsv1.CapacityReservationTypeDefault}
	}
	return out, nil
}
func (instances) Create(context.Context, *awsv1.EC2NodeClass, *karpv1.NodeClaim, map[string]string, []*cloudprovider.InstanceType) (*instance.Instance, error) {
	return nil, fmt.Errorf("not in this oracle")
}
func (instances) List(context.Context) ([]*instance.Instance, error)          { return nil, nil }
func (instances) Delete(context.Context, string) error                        { return nil }
func (instances) Reboot(context.Context, string, string) error                { return nil }
func (instances) CreateTags(context.Context, string, map[string]string) error { return nil }

type placementGroups struct{ id string }

func (p placementGroups) Get(_ context.Context, nc placementgroup.NodeClass) (*placementgroup.PlacementGroup, error) {
	if nc.PlacementGroupSelector() == nil || p.id == "" {
		return nil, nil
	}
	return &placementgroup.PlacementGroup{ID: p.id}, nil
}

func main() {
	scheme := runtime.NewScheme()
	must(corev1.AddToScheme(scheme))
	core := schema.GroupVersion{Group: "karpenter.sh", Version: "v1"}
	scheme.AddKnownTypes(core, &karpv1.NodePool{}, &karpv1.NodePoolList{}, &karpv1.NodeClaim{}, &karpv1.NodeClaimList{})
	metav1.AddToGroupVersion(scheme, core)
	aws := schema.GroupVersion{Group: "karpenter.k8s.aws", Version: "v1"}
	scheme.AddKnownTypes(aws, &awsv1.EC2NodeClass{}, &awsv1.EC2NodeClassList{})
	metav1.AddToGroupVersion(scheme, aws)

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		must(out.Encode(decide(scheme, c)))
	}
	must(in.Err())
}

func decide(scheme *runtime.Scheme, c input) output {
	ctx := coreoptions.ToContext(context.Background(), &coreoptions.Options{})
	ctx = awsoptions.ToContext(ctx, &awsoptions.Options{})
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&c.NodePool, &c.NodeClass, &c.NodeClaim).
		WithStatusSubresource(&karpv1.NodeClaim{}, &karpv1.NodePool{}, &awsv1.EC2NodeClass{}).Build()
	var its []*cloudprovider.InstanceType
	for _, it := range c.InstanceTypes {
		ofs := cloudprovider.Offerings{}
		for _, o := range it.Offerings {
			ofs = append(ofs, &cloudprovider.Offering{Requirements: scheduling.NewNodeSelectorRequirements(o.Requirements...), Available: o.Available})
		}
		its = append(its, &cloudprovider.InstanceType{Name: it.Name, Requirements: scheduling.NewNodeSelectorRequirements(it.Requirements...), Offerings: ofs})
	}
	cp := awscloudprovider.New(types{its}, instances{c.Instance}, events.NewRecorder(record.NewFakeRecorder(100)), kube,
		nil, nil, nil, placementGroups{c.PlacementGroupID}, nil, nil)
	ctrl := disruption.NewController(clocktesting.NewFakeClock(c.Now), kube, cp)
	stored := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(&c.NodeClaim), stored); err != nil {
		return output{Error: err.Error()}
	}
	var o output
	if _, err := ctrl.Reconcile(ctx, stored); err != nil {
		o.Error = strings.TrimSpace(err.Error())
	}
	after := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(&c.NodeClaim), after); err != nil {
		return output{Error: err.Error()}
	}
	if cond := meta.FindStatusCondition(conditions(after), karpv1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
		o.Reason = cond.Reason
	}
	return o
}

func conditions(nc *karpv1.NodeClaim) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(nc.Status.Conditions))
	for _, c := range nc.Status.Conditions {
		out = append(out, metav1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return out
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
