package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// liveness deletes NodeClaims that did not launch or register in time,
// saying why.
func (c *Controller) liveness(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	age := c.Clock.Since(nc.CreationTimestamp.Time)
	var reason, msg string
	switch {
	case !isTrue(nc.Status.Conditions, v1.ConditionLaunched) && age > c.Options.LaunchTimeout:
		reason, msg = v1.ReasonLaunchTimeout, fmt.Sprintf("NodeClaim %s was not launched within %s", nc.Name, c.Options.LaunchTimeout)
	case !isTrue(nc.Status.Conditions, v1.ConditionRegistered) && age > c.Options.RegistrationTimeout:
		reason, msg = v1.ReasonRegistrationTimeout, fmt.Sprintf("no node registered for NodeClaim %s within %s", nc.Name, c.Options.RegistrationTimeout)
		if err := c.registrationFailed(ctx, nc); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	msg += firstProblem(nc.Status.Conditions)
	c.Recorder.Event(nc, corev1.EventTypeWarning, reason, msg)
	logf.FromContext(ctx).Info("deleting NodeClaim", "reason", reason, "message", msg)
	return true, client.IgnoreNotFound(c.Client.Delete(ctx, nc))
}

// registrationFailed records with the NodePool's registration outcomes
// that a node did not register in time.
func (c *Controller) registrationFailed(ctx context.Context, nc *v1.NodeClaim) error {
	cause := "the instance launched but no node registered: check that the node role is mapped in aws-auth (or an EC2_LINUX access entry), that the instance can reach the API server, and its user data (nodewright doctor)"
	pool := nc.Labels[v1.LabelNodePool]
	// A backoff an earlier process left in the NodePool's status goes
	// on counting (this timeout may come before the NodePool
	// controller took it up).
	np := &v1.NodePool{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: pool}, np); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil {
		c.Registrations.RestoreFrom(np)
	}
	c.Registrations.TimedOut(pool, string(nc.UID), c.Clock.Now(), cause)
	return nil
}

// firstProblem is "; " and the type and message of the first condition
// but Ready that is not True and says why, "" when there is none.
func firstProblem(conds []metav1.Condition) string {
	for _, cond := range conds {
		if cond.Status != metav1.ConditionTrue && cond.Message != "" && cond.Type != v1.ConditionReady {
			return "; " + cond.Type + ": " + cond.Message
		}
	}
	return ""
}
