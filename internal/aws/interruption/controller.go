package interruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/loop"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Offerings are where launches go: an interrupted offering is kept out.
type Offerings interface {
	MarkUnavailable(capacityType, instanceType, zone string)
}

// Options configure the controller.
type Options struct {
	// Queue is the SQS queue's name or URL.
	Queue string
	// ActOnRebalance replaces a spot node on a rebalance recommendation
	// (gracefully: no deadline), not only records it.
	ActOnRebalance bool
	// Wait is the long poll of each receive (at most 20 s); Backoff the
	// pause after a failed receive.
	Wait, Backoff time.Duration
}

// DefaultOptions poll as long as SQS allows.
func DefaultOptions(queue string) Options {
	return Options{Queue: queue, Wait: 20 * time.Second, Backoff: 5 * time.Second}
}

// Controller consumes the interruption queue.
type Controller struct {
	Client    client.Client
	SQS       sdk.SQS
	Offerings Offerings
	Recorder  record.EventRecorder
	Clock     clock.Clock
	Metrics   *metrics.Metrics
	Log       logr.Logger
	Options   Options
	url       string
}

// instanceIDIndex indexes NodeClaims by the ID of their instance.
const instanceIDIndex = "status.providerID.instanceID"

// SetupWithManager indexes NodeClaims by instance ID and runs the
// consumer with the manager (on the leader only).
func (c *Controller) SetupWithManager(ctx context.Context, mgr manager.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &v1.NodeClaim{}, instanceIDIndex, func(o client.Object) []string {
		if _, id, err := provider.ParseProviderID(o.(*v1.NodeClaim).Status.ProviderID); err == nil {
			return []string{id}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing NodeClaims by instance ID: %w", err)
	}
	return mgr.Add(c)
}

// NeedLeaderElection is true: only the leader consumes the queue.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start consumes the queue until ctx ends. A queue that cannot be read
// is logged and tried again: the rest of nodewright runs on.
func (c *Controller) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			c.Log.Error(err, "reading the interruption queue; trying again", "queue", c.Options.Queue, "in", c.Options.Backoff)
			loop.Wait(ctx, c.Clock, c.Options.Backoff)
		}
	}
	return nil
}

// Poll receives one batch of messages (waiting up to Options.Wait for
// one) and handles each. A handled message, or one nodewright cannot
// read, is deleted; one whose handling failed stays and comes back after
// its visibility timeout.
func (c *Controller) Poll(ctx context.Context) error {
	url, err := c.queueURL(ctx)
	if err != nil {
		c.Metrics.InterruptionQueueError("get_queue_url")
		return err
	}
	out, err := c.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: longPollSeconds(c.Options.Wait),
	})
	if err != nil {
		c.Metrics.InterruptionQueueError("receive")
		return fmt.Errorf("receiving from queue %s: %w", url, err)
	}
	var errs []error
	for _, raw := range out.Messages {
		if err := c.handle(ctx, aws.ToString(raw.Body)); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := c.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: raw.ReceiptHandle}); err != nil {
			c.Metrics.InterruptionQueueError("delete")
			errs = append(errs, fmt.Errorf("deleting message %s from queue %s: %w", aws.ToString(raw.MessageId), url, err))
			continue
		}
		c.Metrics.InterruptionMessageDeleted()
	}
	return errors.Join(errs...)
}

// queueURL resolves the queue's name once.
func (c *Controller) queueURL(ctx context.Context) (string, error) {
	if c.url != "" {
		return c.url, nil
	}
	if strings.HasPrefix(c.Options.Queue, "https://") || strings.HasPrefix(c.Options.Queue, "http://") {
		c.url = c.Options.Queue
		return c.url, nil
	}
	out, err := c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.Options.Queue)})
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "QueueDoesNotExist" {
			return "", fmt.Errorf("--interruption-queue %s: no such SQS queue in this account and region; create it and its EventBridge rules (docs/cloudformation.yaml makes both; docs/install-eks.md) or fix the name: %w", c.Options.Queue, err)
		}
		return "", fmt.Errorf("finding SQS queue %s (the controller's role needs sqs:GetQueueUrl, sqs:ReceiveMessage and sqs:DeleteMessage on it): %w", c.Options.Queue, err)
	}
	c.url = aws.ToString(out.QueueUrl)
	return c.url, nil
}

// handle acts on one message. Only a failure to act is an error: a
// message nodewright cannot read, or about instances that are not its
// own, is logged and done with.
func (c *Controller) handle(ctx context.Context, body string) error {
	m, err := Parse(body)
	if err != nil {
		c.Metrics.InterruptionMessage(string(m.Kind), 0)
		if errors.Is(err, ErrUnknown) {
			c.Log.V(1).Info("ignoring a message of the interruption queue", "reason", err.Error())
		} else {
			c.Log.Info("deleting a message of the interruption queue that is not an event", "error", err.Error(), "body", truncate(body, 512))
		}
		return nil
	}
	c.Metrics.InterruptionMessage(string(m.Kind), c.Clock.Since(m.At))
	if m.Kind == StateChangeIgnored {
		return nil
	}
	var errs []error
	for _, id := range m.InstanceIDs {
		claims := &v1.NodeClaimList{}
		if err := c.Client.List(ctx, claims, client.MatchingFields{instanceIDIndex: id}); err != nil {
			errs = append(errs, err)
			continue
		}
		if len(claims.Items) == 0 {
			c.Log.V(1).Info("an interruption message about an instance that is not nodewright's", "kind", m.Kind, "instance", id)
			continue
		}
		for i := range claims.Items {
			if err := c.act(ctx, m, id, &claims.Items[i]); err != nil {
				errs = append(errs, fmt.Errorf("acting on %s of instance %s (NodeClaim %s): %w", m.Kind, id, claims.Items[i].Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// act records the event on the NodeClaim and its node, keeps the offering
// out of launches when AWS took it back, and deletes the NodeClaim with
// the instance's deadline: its pods get room elsewhere at once, and the
// drain honours PodDisruptionBudgets until the instance goes.
func (c *Controller) act(ctx context.Context, m Message, instance string, nc *v1.NodeClaim) error {
	if (m.Kind == InstanceStopping || m.Kind == InstanceTerminating) && !nc.DeletionTimestamp.IsZero() {
		return nil // nodewright is terminating it already, or the instance's end is known
	}
	node, err := c.node(ctx, nc)
	if err != nil {
		return err
	}
	capacityType := nc.Labels[v1.LabelCapacityType]
	c.avoidOffering(m.Kind, nc)
	replace := m.Kind != RebalanceRecommendation || c.Options.ActOnRebalance
	c.announce(m, instance, nc, node, replace)
	c.Log.Info("interruption", "kind", m.Kind, "instance", instance, "NodeClaim", nc.Name, "replace", replace, "deadline", m.Deadline)
	if !replace {
		return nil
	}
	return c.replaceClaim(ctx, m, nc, capacityType)
}

// avoidOffering keeps the NodeClaim's offering out of launches for a while
// when AWS takes back its spot instance or reserved capacity.
func (c *Controller) avoidOffering(kind Kind, nc *v1.NodeClaim) {
	instanceType, zone := nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone]
	if instanceType == "" || zone == "" {
		return
	}
	switch kind {
	case SpotInterruption:
		c.Offerings.MarkUnavailable(v1.CapacityTypeSpot, instanceType, zone)
	case CapacityReservationInterruption:
		c.Offerings.MarkUnavailable(v1.CapacityTypeReserved, instanceType, zone)
	}
}

// announce records the interruption on the NodeClaim and on its node, if
// it has one: a Warning, but for a rebalance recommendation, which is
// advice.
func (c *Controller) announce(m Message, instance string, nc *v1.NodeClaim, node *corev1.Node, replace bool) {
	reason, msg := describe(m, instance, replace, c.Clock.Now())
	kind := corev1.EventTypeWarning
	if m.Kind == RebalanceRecommendation {
		kind = corev1.EventTypeNormal
	}
	c.Recorder.Event(nc, kind, reason, msg)
	if node != nil {
		c.Recorder.Event(node, kind, reason, msg)
	}
}

// replaceClaim records the instance's deadline on the NodeClaim and
// deletes it, unless it is being deleted already; capacityType is the
// NodeClaim's as first read, for the metric.
func (c *Controller) replaceClaim(ctx context.Context, m Message, nc *v1.NodeClaim, capacityType string) error {
	if err := c.setDeadline(ctx, nc, m.Deadline); err != nil {
		return err
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := c.Client.Delete(ctx, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	c.Metrics.Interrupted(string(m.Kind), nc.Labels[v1.LabelNodePool], capacityType)
	return nil
}

// setDeadline records when the instance goes as the NodeClaim's
// termination timestamp, unless an earlier one is set.
func (c *Controller) setDeadline(ctx context.Context, nc *v1.NodeClaim, deadline time.Time) error {
	if deadline.IsZero() {
		return nil
	}
	return intent.TerminateBy(ctx, c.Client, nc, deadline)
}

// node is the NodeClaim's node, if it has registered.
func (c *Controller) node(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes, client.MatchingFields{listing.NodeProviderID: nc.Status.ProviderID}); err != nil {
		return nil, err
	}
	if len(nodes.Items) == 0 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}

// describe is the event's reason and message.
func describe(m Message, instance string, replace bool, now time.Time) (string, string) {
	left := ""
	if !m.Deadline.IsZero() && m.Deadline.After(now) {
		left = fmt.Sprintf(" at %s (in %s)", m.Deadline.UTC().Format(time.RFC3339), m.Deadline.Sub(now).Round(time.Second))
	}
	const moving = "; replacing the node now: its pods get room elsewhere and are evicted within their PodDisruptionBudgets until the instance goes"
	switch m.Kind {
	case SpotInterruption:
		return awsv1.ReasonSpotInterrupted, fmt.Sprintf("EC2 reclaims spot instance %s%s%s; this spot offering is avoided for a while", instance, left, moving)
	case CapacityReservationInterruption:
		return awsv1.ReasonCapacityReservationInterrupted, fmt.Sprintf("EC2 reclaims reserved instance %s from its capacity reservation%s%s", instance, left, moving)
	case ScheduledChange:
		return awsv1.ReasonInstanceScheduledChange, fmt.Sprintf("AWS Health scheduled change for instance %s%s (%s)%s", instance, left, m.Detail, moving)
	case InstanceStopping:
		return awsv1.ReasonInstanceStopping, fmt.Sprintf("instance %s is %s; deleting its NodeClaim, its pods get room elsewhere", instance, m.Detail)
	case InstanceTerminating:
		return awsv1.ReasonInstanceTerminating, fmt.Sprintf("instance %s is %s; deleting its NodeClaim, its pods get room elsewhere", instance, m.Detail)
	}
	if replace {
		return awsv1.ReasonSpotRebalanceRecommendation, fmt.Sprintf("EC2 recommends rebalancing spot instance %s: it is at elevated risk of interruption%s", instance, moving)
	}
	return awsv1.ReasonSpotRebalanceRecommendation, fmt.Sprintf("EC2 recommends rebalancing spot instance %s: it is at elevated risk of interruption (nodewright replaces it only with --interruption-act-on-rebalance)", instance)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// longPollSeconds is how long a receive waits for a message, in whole
// seconds from 0 to SQS's most, 20.
func longPollSeconds(wait time.Duration) int32 {
	switch secs := wait / time.Second; {
	case secs <= 0:
		return 0
	case secs >= 20:
		return 20
	default:
		return int32(secs)
	}
}
