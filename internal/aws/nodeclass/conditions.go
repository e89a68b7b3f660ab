package nodeclass

import (
	"cmp"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// Resolution is what reconciling an EC2NodeClass found; each Err says why
// that part could not be resolved.
type Resolution struct {
	Subnets        []Subnet
	SubnetsErr     error
	SecurityGroups []awsv1.SecurityGroup
	SecurityGrpErr error
	AMIs           []awsv1.AMI
	AMIsErr        error
	// NoAMIs says why no AMI was found, and what to do (empty: the
	// generic message).
	NoAMIs          string
	InstanceProfile string
	ProfileErr      error
	Findings        []userdata.Finding
	Reservations    []Reservation
	ReservationsErr error
	PlacementGroup  *awsv1.PlacementGroup
	PlacementErr    error
	// Prices, when read, say where launch prices come from.
	Prices *instancetypes.PriceStatus
	// KubeletExpressions: the NodeClassCEL feature gate is on, so
	// spec.kubelet may hold CEL expressions.
	KubeletExpressions bool
	// Specs are the account's instance types, which spec.kubelet's
	// expressions must hold for (the embedded catalog when nil: the
	// offline tools).
	Specs []instancetypes.Spec
}

// Conditions derives the EC2NodeClass conditions from a resolution. Ready
// is True only when every other condition is.
func Conditions(nc *awsv1.EC2NodeClass, r Resolution) []metav1.Condition {
	conds := []metav1.Condition{
		found(awsv1.ConditionSubnetsReady, len(r.Subnets), r.SubnetsErr, awsv1.ReasonSubnetsNotFound,
			"no subnet matches spec.subnetSelectorTerms "+describeSubnetTerms(nc.Spec.SubnetSelectorTerms)+"; tag the cluster's subnets or fix the terms"),
		found(awsv1.ConditionSecurityGroupsReady, len(r.SecurityGroups), r.SecurityGrpErr, awsv1.ReasonSecurityGroupsNotFound,
			"no security group matches spec.securityGroupSelectorTerms "+describeGroupTerms(nc.Spec.SecurityGroupSelectorTerms)+"; tag the cluster's security groups or fix the terms"),
		found(awsv1.ConditionAMIsReady, len(r.AMIs), r.AMIsErr, awsv1.ReasonAMIsNotFound,
			cmp.Or(r.NoAMIs, "no AMI matches spec.amiSelectorTerms "+DescribeAMITerms(nc.Spec.AMISelectorTerms))),
	}
	profile := metav1.Condition{Type: awsv1.ConditionInstanceProfileReady, Status: metav1.ConditionTrue, Reason: awsv1.ReasonResolved, Message: "instance profile " + r.InstanceProfile}
	if r.ProfileErr != nil {
		profile = metav1.Condition{Type: awsv1.ConditionInstanceProfileReady, Status: metav1.ConditionFalse, Reason: awsv1.ReasonInstanceProfileNotReady, Message: r.ProfileErr.Error()}
	}
	conds = append(conds, profile)
	conds = append(conds, Validation(nc, r), placementCondition(nc, r))
	var notReady []string
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			notReady = append(notReady, c.Type)
		}
	}
	ready := metav1.Condition{Type: awsv1.ConditionReady, Status: metav1.ConditionTrue, Reason: awsv1.ReasonReady}
	if len(notReady) > 0 {
		ready = metav1.Condition{Type: awsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: awsv1.ReasonNotReady,
			Message: "not ready: " + strings.Join(notReady, ", ")}
	}
	conds = append(conds, ready, reservationsCondition(nc, r))
	if r.Prices != nil {
		conds = append(conds, PricesCondition(*r.Prices))
	}
	return conds
}

// Validation is the ValidationSucceeded condition: False when spec.kubelet
// is refused (kubeletValidation) or spec.userData has an error finding
// (r.Findings), else True. It reads nothing but the object and r, so the
// offline tools set it as the controller does.
func Validation(nc *awsv1.EC2NodeClass, r Resolution) metav1.Condition {
	if bad := kubeletValidation(nc, r); bad != nil {
		return *bad
	}
	var errs []string
	for _, f := range r.Findings {
		if f.Severity == userdata.Error {
			errs = append(errs, f.Code+": "+f.Explain())
		}
	}
	if len(errs) > 0 {
		return metav1.Condition{Type: awsv1.ConditionValidationSucceeded, Status: metav1.ConditionFalse, Reason: awsv1.ReasonUserDataInvalid,
			Message: "spec.userData would keep nodes from registering, so nothing is launched from this EC2NodeClass: " + strings.Join(errs, "; ")}
	}
	return metav1.Condition{Type: awsv1.ConditionValidationSucceeded, Status: metav1.ConditionTrue, Reason: awsv1.ReasonValid}
}

// OfflineValidation is Validation as the controller would set it, from
// the object alone: its user data validated as the controller does
// (errors stop launches), spec.kubelet's expressions allowed.
func OfflineValidation(nc *awsv1.EC2NodeClass) metav1.Condition {
	return Validation(nc, Resolution{Findings: UserDataFindings(nc), KubeletExpressions: true})
}

// UserDataFindings validate an EC2NodeClass's spec.userData for its AMI
// family, knowing the kube-dns address when spec.kubelet sets it.
func UserDataFindings(nc *awsv1.EC2NodeClass) []userdata.Finding {
	userData := ""
	if nc.Spec.UserData != nil {
		userData = *nc.Spec.UserData
	}
	known := userdata.Known{}
	if k, err := kubeletconfig.Parse(nc.Spec.Kubelet); err == nil && k != nil && len(k.ClusterDNS) == 1 {
		known.ClusterDNS = k.ClusterDNS[0]
	}
	if Family(nc) == awsv1.AMIFamilyCustom {
		known.ImageFamily = boot.ImagesFamily(imageNames(nc))
	}
	return userdata.ValidateWith(Family(nc), userData, known)
}

// reservationsCondition says which capacity reservations were found. It
// is not part of Ready: without a reservation nodes launch as spot or
// on-demand.
func reservationsCondition(nc *awsv1.EC2NodeClass, r Resolution) metav1.Condition {
	terms := nc.Spec.CapacityReservationSelectorTerms
	switch {
	case len(terms) == 0:
		return metav1.Condition{Type: awsv1.ConditionCapacityReservationsReady, Status: metav1.ConditionTrue, Reason: awsv1.ReasonResolved,
			Message: "no capacityReservationSelectorTerms: nodes launch as spot or on-demand"}
	case r.ReservationsErr != nil:
		return metav1.Condition{Type: awsv1.ConditionCapacityReservationsReady, Status: metav1.ConditionFalse, Reason: awsv1.ReasonResolutionFailed, Message: r.ReservationsErr.Error()}
	case len(r.Reservations) == 0:
		return metav1.Condition{Type: awsv1.ConditionCapacityReservationsReady, Status: metav1.ConditionFalse, Reason: awsv1.ReasonReservationsNotFound,
			Message: "no active capacity reservation matches spec.capacityReservationSelectorTerms " + describeReservationTerms(terms) +
				"; check the ids, tags and ownerID (reservations shared from another account need ownerID); until one matches, nodes launch as spot or on-demand"}
	}
	parts := make([]string, 0, len(r.Reservations))
	for _, res := range r.Reservations {
		parts = append(parts, fmt.Sprintf("%s (%s in %s, %d available)", res.ID, res.InstanceType, res.AvailabilityZone, res.Available))
	}
	return metav1.Condition{Type: awsv1.ConditionCapacityReservationsReady, Status: metav1.ConditionTrue, Reason: awsv1.ReasonResolved,
		Message: "capacity reservations " + strings.Join(parts, ", ")}
}

func found(condType string, n int, err error, reason, missing string) metav1.Condition {
	switch {
	case err != nil:
		return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: awsv1.ReasonResolutionFailed, Message: err.Error()}
	case n == 0:
		return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: reason, Message: missing}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: awsv1.ReasonResolved}
}

func describeTags(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + tags[k]
	}
	return "tags " + strings.Join(parts, ",")
}

func describeSubnetTerms(terms []awsv1.SubnetSelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		if t.ID != "" {
			parts = append(parts, "id "+t.ID)
		} else {
			parts = append(parts, describeTags(t.Tags))
		}
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func describeGroupTerms(terms []awsv1.SecurityGroupSelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		part := describeTags(t.Tags)
		switch {
		case t.ID != "":
			part = "id " + t.ID
		case t.Name != "":
			part = "name " + t.Name
		}
		parts = append(parts, part)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// DescribeAMITerms summarises amiSelectorTerms for messages.
func DescribeAMITerms(terms []awsv1.AMISelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		switch {
		case t.Alias != "":
			parts = append(parts, "alias "+t.Alias)
		case t.ID != "":
			parts = append(parts, "id "+t.ID)
		case t.SSMParameter != "":
			parts = append(parts, "ssmParameter "+t.SSMParameter)
		case t.Name != "":
			parts = append(parts, fmt.Sprintf("name %s owner %s", t.Name, t.Owner))
		default:
			parts = append(parts, describeTags(t.Tags))
		}
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// kubeletValidation is the ValidationSucceeded condition spec.kubelet
// sets, nil when it is fine: values the kubelet would refuse, then CEL
// expressions while the NodeClassCEL gate is off, expressions that do not
// compile, fields the AMI family would not apply, and expressions that
// fail for some instance type.
func kubeletValidation(nc *awsv1.EC2NodeClass, r Resolution) *metav1.Condition {
	const nothing = "; nothing is launched from this EC2NodeClass until then"
	failed := func(reason, message string) *metav1.Condition {
		return &metav1.Condition{Type: awsv1.ConditionValidationSucceeded, Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	kubelet, err := kubeletconfig.Parse(nc.Spec.Kubelet)
	var bad *kubeletconfig.Error
	switch {
	case errors.As(err, &bad) && bad.Reason == awsv1.ReasonInvalidKubeletConfiguration:
		return failed(bad.Reason, "the kubelet would refuse spec.kubelet, so nothing is launched from this EC2NodeClass: "+bad.Error())
	case !r.KubeletExpressions && kubeletconfig.HasExpressions(nc.Spec.Kubelet):
		return failed(awsv1.ReasonKubeletExpressionsDisabled, "spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled; "+
			"start the controller with --aws-feature-gates NodeClassCEL=true (Helm: settings.awsFeatureGates.nodeClassCEL) or give numbers and quantities"+nothing)
	case err != nil:
		return failed(awsv1.ReasonKubeletExpressionInvalid, err.Error()+nothing)
	}
	if unsupported := kubeletconfig.Unsupported(Family(nc), nc.Spec.Kubelet); unsupported != "" {
		return failed(awsv1.ReasonUnsupportedKubeletConfiguration, unsupported+nothing)
	}
	if !kubelet.HasExpressions() {
		return nil
	}
	specs := r.Specs
	if specs == nil {
		specs, _ = instancetypes.Catalog()
	}
	windows, _ := instancetypes.WindowsOf(nc)
	for _, s := range specs {
		if _, err := kubelet.For(instancetypes.VarsOf(s, windows)); err != nil {
			return failed(awsv1.ReasonKubeletExpressionEvaluationFailed, err.Error()+"; an expression must give a usable value for every instance type"+nothing)
		}
	}
	return nil
}

// imageNames are the names of a class's images: those of its status, or
// before it has one, those its terms select by (a name or SSM parameter
// each; none when a term selects by id or tags).
func imageNames(nc *awsv1.EC2NodeClass) []string {
	var names []string
	for _, ami := range nc.Status.AMIs {
		names = append(names, ami.Name)
	}
	if len(names) > 0 {
		return names
	}
	for _, t := range nc.Spec.AMISelectorTerms {
		switch {
		case t.Name != "":
			names = append(names, t.Name)
		case t.SSMParameter != "":
			names = append(names, t.SSMParameter)
		default:
			return nil
		}
	}
	return names
}
