package interruption

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Events in the formats EventBridge delivers them (as AWS documents them).
const (
	spotWarning = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",
"account":"123456789012","time":"2026-11-24T10:00:00Z","region":"us-east-2","resources":["arn:aws:ec2:us-east-2a:instance/i-0b662ef9931388ba0"],
"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	rebalance = `{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","account":"123456789012",
"time":"2026-11-24T10:00:00Z","region":"us-east-2","resources":["arn:aws:ec2:us-east-2:123456789012:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0"}}`
	reservation = `{"version":"0","id":"3","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012",
"time":"2026-11-24T10:00:00Z","region":"us-east-2","resources":[],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	health = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012",
"time":"2026-11-24T10:00:00Z","region":"us-east-2","resources":["i-0b662ef9931388ba0"],"detail":{"eventArn":"arn:aws:health:us-east-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x",
"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Thu, 26 Nov 2026 12:00:00 GMT",
"endTime":"Thu, 26 Nov 2026 13:00:00 GMT","eventDescription":[{"language":"en_US","latestDescription":"The instance is scheduled for retirement."}],
"affectedEntities":[{"entityValue":"i-0b662ef9931388ba0"},{"entityValue":"i-0aaaaaaaaaaaaaaaa"}]}}`
)

func stateChange(state string) string {
	return `{"version":"0","id":"4","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012",
"time":"2026-11-24T10:00:00Z","region":"us-east-2","resources":[],"detail":{"instance-id":"i-0b662ef9931388ba0","state":"` + state + `"}}`
}

func TestParse(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	one := []string{"i-0b662ef9931388ba0"}
	for name, tc := range map[string]struct {
		body string
		want Message
	}{
		"spot interruption": {spotWarning, Message{Kind: SpotInterruption, InstanceIDs: one, At: at, Deadline: at.Add(2 * time.Minute)}},
		"rebalance":         {rebalance, Message{Kind: RebalanceRecommendation, InstanceIDs: one, At: at}},
		"reservation":       {reservation, Message{Kind: CapacityReservationInterruption, InstanceIDs: one, At: at, Deadline: at.Add(2 * time.Minute)}},
		"scheduled change": {health, Message{Kind: ScheduledChange, InstanceIDs: []string{"i-0b662ef9931388ba0", "i-0aaaaaaaaaaaaaaaa"}, At: at,
			Deadline: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Detail: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED: The instance is scheduled for retirement."}},
		"stopping":      {stateChange("stopping"), Message{Kind: InstanceStopping, InstanceIDs: one, At: at, Deadline: at, Detail: "stopping"}},
		"stopped":       {stateChange("stopped"), Message{Kind: InstanceStopping, InstanceIDs: one, At: at, Deadline: at, Detail: "stopped"}},
		"shutting-down": {stateChange("shutting-down"), Message{Kind: InstanceTerminating, InstanceIDs: one, At: at, Deadline: at, Detail: "shutting-down"}},
		"terminated":    {stateChange("terminated"), Message{Kind: InstanceTerminating, InstanceIDs: one, At: at, Deadline: at, Detail: "terminated"}},
		"running":       {stateChange("running"), Message{Kind: StateChangeIgnored, InstanceIDs: one, At: at, Detail: "running"}},
	} {
		got, err := Parse(tc.body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	for name, tc := range map[string]struct {
		body    string
		kind    Kind
		unknown bool
	}{
		"not JSON":              {"hello", Malformed, false},
		"not an event":          {`{"Records":[]}`, Malformed, false},
		"no instance":           {`{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`, Malformed, false},
		"another EC2 event":     {`{"source":"aws.ec2","detail-type":"EBS Snapshot Notification","detail":{"instance-id":"i-1"}}`, Unknown, true},
		"another source":        {`{"source":"aws.s3","detail-type":"Object Created","detail":{}}`, Unknown, true},
		"another Health event":  {`{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"RDS","eventTypeCategory":"scheduledChange"}}`, Unknown, true},
		"Health without entity": {`{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange"}}`, Malformed, false},
	} {
		got, err := Parse(tc.body)
		if err == nil || got.Kind != tc.kind || errors.Is(err, ErrUnknown) != tc.unknown {
			t.Errorf("%s: %+v, %v; want kind %s (unknown: %v)", name, got, err, tc.kind, tc.unknown)
		}
	}
}

// The parser never panics, whatever the queue holds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{spotWarning, rebalance, reservation, health, stateChange("stopped"), "{}", "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m, err := Parse(body)
		if err == nil && (m.Kind == "" || len(m.InstanceIDs) == 0) {
			t.Errorf("%q: parsed without a kind or instances: %+v", body, m)
		}
	})
}
