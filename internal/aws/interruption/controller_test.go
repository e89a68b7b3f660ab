package interruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/interruption"
	"github.com/nodewright/nodewright/internal/listing"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// offerings records the offerings marked unavailable.
type offerings struct {
	mu     sync.Mutex
	marked []string
}

func (o *offerings) MarkUnavailable(capacityType, instanceType, zone string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.marked = append(o.marked, capacityType+":"+instanceType+":"+zone)
}

func (o *offerings) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.marked)
}

type env struct {
	kube client.Client
	// cached reads as the controller does, from the manager's cache.
	cached   client.Reader
	account  *simaws.Account
	queue    string
	marked   *offerings
	recorder *record.FakeRecorder
}

// start runs the controller in a manager against a real API server and
// the simulated account's SQS.
func start(t *testing.T, opts interruption.Options) *env {
	t.Helper()
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, scheme := optest.Direct(t, plane)
	account := simaws.NewAccount()
	url := account.CreateQueue("interruptions")
	if opts.Queue == "" {
		opts.Queue = "interruptions"
	}
	opts.Wait, opts.Backoff = time.Second, 100*time.Millisecond
	skip := true
	mgr, err := ctrl.NewManager(plane.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: logr.Discard(), Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := listing.Index(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	e := &env{kube: kube, cached: mgr.GetClient(), account: account, queue: url, marked: &offerings{}, recorder: record.NewFakeRecorder(100)}
	c := &interruption.Controller{Client: mgr.GetClient(), SQS: account.SQS(), Offerings: e.marked, Recorder: e.recorder, Clock: clock.RealClock{},
		Log: logr.Discard(), Options: opts}
	if err := c.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	optest.RunManager(t, ctx, cancel, mgr)
	return e
}

// claim creates a launched spot NodeClaim with a node, held by the
// termination finalizer so that its deletion shows.
func (e *env) claim(t *testing.T, name, instance string) {
	t.Helper()
	ctx := context.Background()
	providerID := "aws:///us-east-1a/" + instance
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer}, Labels: map[string]string{
		v1.LabelNodePool: "general", v1.LabelCapacityType: v1.CapacityTypeSpot, corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a"}}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot}}}
	if err := e.kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = providerID
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := e.kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	// The controller finds NodeClaims by instance in its cache: a message
	// about one it does not see yet is not its own.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		seen := &v1.NodeClaim{}
		err := e.cached.Get(ctx, client.ObjectKey{Name: name}, seen)
		return err == nil && seen.Status.ProviderID == providerID, client.IgnoreNotFound(err)
	}); err != nil {
		t.Fatalf("the controller's cache does not show NodeClaim %s: %v", name, err)
	}
}

func (e *env) send(t *testing.T, body string) {
	t.Helper()
	if _, err := e.account.SQS().SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queue), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

func event(detailType, source string, at time.Time, detail string) string {
	return fmt.Sprintf(`{"version":"0","id":"x","detail-type":%q,"source":%q,"account":"111122223333","time":%q,"region":"us-east-1","resources":[],"detail":%s}`,
		detailType, source, at.UTC().Format(time.RFC3339), detail)
}

func (e *env) get(t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

// waitDrained waits until every message of the queue is handled.
func (e *env) waitDrained(t *testing.T) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return e.account.QueueMessages("interruptions") == 0, nil
	}); err != nil {
		t.Fatalf("the queue still holds %d messages", e.account.QueueMessages("interruptions"))
	}
}

func (e *env) events() string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// A spot interruption warning deletes the NodeClaim with the instance's
// end as its termination deadline, keeps the offering out of launches and
// says so on the NodeClaim and node; messages about other instances, and
// messages that are not events, are deleted without effect.
func TestSpotInterruption(t *testing.T) {
	e := start(t, interruption.Options{})
	e.claim(t, "spot", "i-00000000000000001")
	e.claim(t, "bystander", "i-00000000000000002")
	at := time.Now().Truncate(time.Second)
	e.send(t, "not an event at all")
	e.send(t, event("EC2 Spot Instance Interruption Warning", "aws.ec2", at, `{"instance-id":"i-0ffffffffffffffff","instance-action":"terminate"}`))
	e.send(t, event("EC2 Spot Instance Interruption Warning", "aws.ec2", at, `{"instance-id":"i-00000000000000001","instance-action":"terminate"}`))
	e.waitDrained(t)

	spot := e.get(t, "spot")
	if spot.DeletionTimestamp.IsZero() {
		t.Fatal("the interrupted NodeClaim is not being deleted")
	}
	if got, want := spot.Annotations[v1.AnnotationTerminationTimestamp], at.Add(2*time.Minute).UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want the instance's end %q", got, want)
	}
	if !e.get(t, "bystander").DeletionTimestamp.IsZero() {
		t.Error("a NodeClaim no message names is being deleted")
	}
	if got := e.marked.get(); !slices.Equal(got, []string{"spot:m5.large:us-east-1a"}) {
		t.Errorf("offerings marked unavailable: %v", got)
	}
	events := e.events()
	if strings.Count(events, "Warning SpotInterrupted EC2 reclaims spot instance i-00000000000000001") != 2 {
		t.Errorf("want a SpotInterrupted event on the NodeClaim and the node, got:\n%s", events)
	}
}

// A rebalance recommendation is recorded, and acted on only when asked;
// a state change of an instance already being deleted changes nothing.
func TestRebalanceAndStateChanges(t *testing.T) {
	for _, act := range []bool{false, true} {
		t.Run(fmt.Sprintf("act=%v", act), func(t *testing.T) {
			e := start(t, interruption.Options{ActOnRebalance: act})
			e.claim(t, "risky", "i-00000000000000001")
			e.claim(t, "stopped", "i-00000000000000002")
			at := time.Now().Truncate(time.Second)
			e.send(t, event("EC2 Instance Rebalance Recommendation", "aws.ec2", at, `{"instance-id":"i-00000000000000001"}`))
			e.send(t, event("EC2 Instance State-change Notification", "aws.ec2", at, `{"instance-id":"i-00000000000000002","state":"stopped"}`))
			e.waitDrained(t)
			risky := e.get(t, "risky")
			if deleting := !risky.DeletionTimestamp.IsZero(); deleting != act {
				t.Errorf("the NodeClaim of the rebalance recommendation is being deleted: %v, want %v", deleting, act)
			}
			if risky.Annotations[v1.AnnotationTerminationTimestamp] != "" {
				t.Error("a rebalance recommendation set a termination deadline: the instance is not going")
			}
			stopped := e.get(t, "stopped")
			if stopped.DeletionTimestamp.IsZero() || stopped.Annotations[v1.AnnotationTerminationTimestamp] != at.UTC().Format(time.RFC3339) {
				t.Errorf("a stopped instance's NodeClaim: deleting %v, deadline %q; want deleted at once", !stopped.DeletionTimestamp.IsZero(),
					stopped.Annotations[v1.AnnotationTerminationTimestamp])
			}
			events := e.events()
			if !strings.Contains(events, "SpotRebalanceRecommendation") || !strings.Contains(events, "InstanceStopping instance i-00000000000000002 is stopped") {
				t.Errorf("events:\n%s", events)
			}
			if len(e.marked.get()) != 0 {
				t.Errorf("offerings marked for a rebalance or a stop: %v", e.marked.get())
			}
			// The instance terminates later: its NodeClaim is being deleted
			// already (as the controller's cache shows it), and the message
			// is done with quietly.
			if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				seen := &v1.NodeClaim{}
				err := e.cached.Get(ctx, client.ObjectKey{Name: "stopped"}, seen)
				return err == nil && !seen.DeletionTimestamp.IsZero(), err
			}); err != nil {
				t.Fatalf("the controller's cache does not show NodeClaim stopped being deleted: %v", err)
			}
			e.send(t, event("EC2 Instance State-change Notification", "aws.ec2", at, `{"instance-id":"i-00000000000000002","state":"terminated"}`))
			e.waitDrained(t)
			if events := e.events(); events != "" {
				t.Errorf("events for the termination of an instance already going:\n%s", events)
			}
		})
	}
}

// A queue that does not exist is named with the fix; the controller keeps
// trying and consumes it once it exists.
func TestMissingQueue(t *testing.T) {
	missing := &interruption.Controller{SQS: simaws.NewAccount().SQS(), Options: interruption.Options{Queue: "nowhere"}}
	err := missing.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--interruption-queue nowhere: no such SQS queue") || !strings.Contains(err.Error(), "create it and its EventBridge rules") {
		t.Errorf("a missing queue: %v", err)
	}
	e := start(t, interruption.Options{Queue: "created-later"})
	e.claim(t, "spot", "i-00000000000000001")
	url := e.account.CreateQueue("created-later")
	body := event("EC2 Spot Instance Interruption Warning", "aws.ec2", time.Now(), `{"instance-id":"i-00000000000000001","instance-action":"terminate"}`)
	if _, err := e.account.SQS().SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return !e.get(t, "spot").DeletionTimestamp.IsZero(), nil
	}); err != nil {
		t.Fatal("the queue created after the controller started is not consumed")
	}
}
