package nodeclass

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/conditions"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Controller keeps EC2NodeClass status current: resolved subnets, security
// groups, AMIs and instance profile, user data validation, and the
// conditions that say what is missing.
type Controller struct {
	Client   client.Client
	Resolver *Resolver
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// Refresh is how often an EC2NodeClass is resolved again.
	Refresh time.Duration
	// SkipUserDataValidation reports user data errors as Warning events
	// only, so nodes launch anyway (to reproduce S1 and S3 at runtime).
	SkipUserDataValidation bool
	// LaunchTemplates deletes the launch templates made for a deleted
	// EC2NodeClass.
	LaunchTemplates LaunchTemplateCleaner
	// Prices, when set, are read and reported in the PricesCurrent
	// condition and metrics.
	Prices  PriceReader
	Metrics *metrics.Metrics
	// KubeletExpressions is the NodeClassCEL feature gate: spec.kubelet
	// may hold CEL expressions.
	KubeletExpressions bool
	// Specs are the account's instance types, which spec.kubelet's
	// expressions must hold for (the embedded catalog when nil).
	Specs func(context.Context) ([]instancetypes.Spec, error)
}

// LaunchTemplateCleaner deletes the launch templates of an EC2NodeClass.
type LaunchTemplateCleaner interface {
	DeleteLaunchTemplates(ctx context.Context, nodeClass string) error
}

// waitForNodeClaims is how often a deleted EC2NodeClass checks whether its
// NodeClaims are gone (their deletion also triggers a check).
const waitForNodeClaims = 10 * time.Second

// SetupWithManager registers the controller.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("ec2nodeclass.status").For(&awsv1.EC2NodeClass{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if ref := o.(*v1.NodeClaim).Spec.NodeClassRef; ref != nil && ref.Kind == "EC2NodeClass" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ref.Name}}}
			}
			return nil
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false }, UpdateFunc: func(event.UpdateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return true }, GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

// Reconcile resolves one EC2NodeClass and patches its status once; a
// deleted one is finalized.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := c.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if err := c.addFinalizer(ctx, nc); err != nil {
		return ctrl.Result{}, err
	}
	res := c.resolve(ctx, nc)
	res.KubeletExpressions = c.KubeletExpressions
	if c.Specs != nil && c.KubeletExpressions && kubeletconfig.HasExpressions(nc.Spec.Kubelet) {
		specs, err := c.Specs(ctx)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("reading instance types for the kubelet expressions of EC2NodeClass %s: %w", nc.Name, err)
		}
		res.Specs = specs
	}
	before := nc.DeepCopy()
	setResolved(nc, res)
	c.setConditions(nc, res)
	c.warnFindings(nc, res)
	if err := c.Client.Status().Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching the status of EC2NodeClass %s: %w", nc.Name, err)
	}
	return ctrl.Result{RequeueAfter: c.Refresh}, nil
}

// addFinalizer holds a new EC2NodeClass until its NodeClaims, launch
// templates and instance profile are gone.
func (c *Controller) addFinalizer(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(nc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(nc, awsv1.TerminationFinalizer)
	if err := c.Client.Patch(ctx, nc, patch); err != nil {
		return fmt.Errorf("adding the finalizer of EC2NodeClass %s: %w", nc.Name, err)
	}
	return nil
}

// setResolved writes what was resolved into the status.
func setResolved(nc *awsv1.EC2NodeClass, res Resolution) {
	nc.Status.Subnets = nil
	for _, s := range res.Subnets {
		nc.Status.Subnets = append(nc.Status.Subnets, s.Subnet)
	}
	nc.Status.SecurityGroups = res.SecurityGroups
	nc.Status.AMIs = res.AMIs
	if res.ProfileErr == nil {
		// On an error the status keeps the profile it names: an adopted
		// one is found again (and deleted with the class) through it.
		nc.Status.InstanceProfile = res.InstanceProfile
	}
	nc.Status.CapacityReservations = nil
	for _, r := range res.Reservations {
		nc.Status.CapacityReservations = append(nc.Status.CapacityReservations, r.CapacityReservation)
	}
	nc.Status.PlacementGroup = res.PlacementGroup
}

// setConditions sets the conditions of the resolution; a condition that
// turns False, but Ready, which sums the others up, is also a Warning
// event.
func (c *Controller) setConditions(nc *awsv1.EC2NodeClass, res Resolution) {
	now := metav1.NewTime(c.Clock.Now())
	for _, cond := range Conditions(nc, res) {
		cond.ObservedGeneration, cond.LastTransitionTime = nc.Generation, now
		if conditions.Set(&nc.Status.Conditions, cond) && cond.Status == metav1.ConditionFalse && cond.Type != awsv1.ConditionReady {
			c.Recorder.Event(nc, corev1.EventTypeWarning, cond.Reason, conditions.Truncate(cond.Message))
		}
	}
}

// warnFindings reports the user data's warnings as events; its errors are
// in the conditions.
func (c *Controller) warnFindings(nc *awsv1.EC2NodeClass, res Resolution) {
	for _, f := range res.Findings {
		if f.Severity == userdata.Warning {
			c.Recorder.Event(nc, corev1.EventTypeWarning, awsv1.ReasonUserDataWarning, f.Code+": "+f.Explain())
		}
	}
}

func (c *Controller) resolve(ctx context.Context, nc *awsv1.EC2NodeClass) Resolution {
	var res Resolution
	res.Subnets, res.SubnetsErr = c.Resolver.Subnets(ctx, nc)
	res.SecurityGroups, res.SecurityGrpErr = c.Resolver.SecurityGroups(ctx, nc)
	res.AMIs, res.AMIsErr = c.Resolver.AMIs(ctx, nc)
	if len(res.AMIs) == 0 && res.AMIsErr == nil {
		res.NoAMIs = c.Resolver.NoAMIMessage(nc)
	}
	res.InstanceProfile, res.ProfileErr = c.Resolver.InstanceProfile(ctx, nc)
	res.Reservations, res.ReservationsErr = c.Resolver.CapacityReservations(ctx, nc, c.Clock.Now())
	res.PlacementGroup, res.PlacementErr = c.Resolver.PlacementGroup(ctx, nc)
	if st := c.pricesOf(ctx); st.Read() {
		res.Prices = &st
		sources := []string{string(instancetypes.PricesFromAPI), string(instancetypes.PricesLastKnown), string(instancetypes.PricesBuiltIn)}
		c.Metrics.PriceSource("on_demand", string(st.OnDemand.Source), sources, st.OnDemand.Since)
		c.Metrics.PriceSource("spot", string(st.Spot.Source), sources, st.Spot.Since)
	}
	res.Findings = UserDataFindings(nc)
	if c.SkipUserDataValidation {
		for i := range res.Findings {
			res.Findings[i].Severity = userdata.Warning
		}
	}
	return res
}

// pricesOf reads where prices come from, when a reader is set; a status
// not yet read (the instance types could not be read at all) says nothing.
func (c *Controller) pricesOf(ctx context.Context) instancetypes.PriceStatus {
	if c.Prices == nil {
		return instancetypes.PriceStatus{}
	}
	return c.Prices.PriceStatus(ctx)
}

// finalize waits until no NodeClaim uses a deleted EC2NodeClass, then
// deletes its launch templates and the instance profile made for its role,
// and lets it go.
func (c *Controller) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		return ctrl.Result{}, nil
	}
	using, err := c.claimsUsing(ctx, nc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(using) > 0 {
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, awsv1.ReasonWaitingOnNodeClaimTermination,
			"EC2NodeClass %s is deleted once its %d NodeClaims are gone: %s", nc.Name, len(using), strings.Join(using, ", "))
		return ctrl.Result{RequeueAfter: waitForNodeClaims}, nil
	}
	if err := c.deleteMadeFor(ctx, nc); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFromWithOptions(nc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(nc, awsv1.TerminationFinalizer)
	if err := c.Client.Patch(ctx, nc, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logf.FromContext(ctx).Info("deleted EC2NodeClass: launch templates and managed instance profile removed")
	return ctrl.Result{}, nil
}

// claimsUsing are the names of the NodeClaims that use the EC2NodeClass.
func (c *Controller) claimsUsing(ctx context.Context, nc *awsv1.EC2NodeClass) ([]string, error) {
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims); err != nil {
		return nil, err
	}
	var using []string
	for _, claim := range claims.Items {
		if ref := claim.Spec.NodeClassRef; ref != nil && ref.Kind == "EC2NodeClass" && ref.Name == nc.Name {
			using = append(using, claim.Name)
		}
	}
	return using, nil
}

// deleteMadeFor deletes what nodewright made in AWS for the EC2NodeClass:
// its launch templates and the instance profile it manages.
func (c *Controller) deleteMadeFor(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if c.LaunchTemplates != nil {
		if err := c.LaunchTemplates.DeleteLaunchTemplates(ctx, nc.Name); err != nil {
			return err
		}
	}
	if err := c.Resolver.DeleteInstanceProfile(ctx, nc); err != nil {
		return err
	}
	legacy, err := c.Resolver.LegacyProfile(ctx, nc)
	if err != nil {
		return err
	}
	if legacy != "" {
		c.Recorder.Eventf(nc, corev1.EventTypeWarning, awsv1.ReasonLegacyInstanceProfileLeft,
			"instance profile %s (the name made before profiles held the region) is left in place: a cluster of the same name in another region may launch with it; once no instance in any region uses it, delete it: aws iam remove-role-from-instance-profile --instance-profile-name %s --role-name %s && aws iam delete-instance-profile --instance-profile-name %s",
			legacy, legacy, nc.Spec.Role, legacy)
	}
	return nil
}
