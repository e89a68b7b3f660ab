package aws

import (
	"context"
	"crypto/md5" //nolint:gosec // SQS's own body checksum is MD5
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// SQS is the account's SQS: standard queues with long polling and
// visibility timeouts, enough for an interruption queue.
type SQS struct{ account *Account }

// SQS returns the account's SQS API.
func (a *Account) SQS() *SQS { return &SQS{account: a} }

// queues hold the account's SQS queues. They have their own lock: the
// account sends to them while it holds its own.
type queues struct {
	mu     sync.Mutex
	byName map[string]*queue
	// arrived is closed and replaced when a message arrives, waking
	// long polls.
	arrived chan struct{}
	next    int
}

type queue struct {
	name     string
	messages []*queued
}

type queued struct {
	id, body, receipt string
	sent              time.Time
	// invisibleUntil hides a received message until it is deleted or
	// its visibility timeout ends.
	invisibleUntil time.Time
	receives       int
}

// DefaultVisibilityTimeout is SQS's default: how long a received message
// stays hidden from other receives.
const DefaultVisibilityTimeout = 30 * time.Second

// queueURL is a queue's URL as SQS gives it.
func queueURL(name string) string {
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", account.Region, account.AccountID, name)
}

// CreateQueue creates a queue (nothing when it exists) and returns its
// URL.
func (a *Account) CreateQueue(name string) string {
	q := &a.queues
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byName == nil {
		q.byName, q.arrived = map[string]*queue{}, make(chan struct{})
	}
	if q.byName[name] == nil {
		q.byName[name] = &queue{name: name}
	}
	return queueURL(name)
}

// lookup finds a queue by URL; the caller holds q.mu.
func (q *queues) lookup(url string) (*queue, error) {
	name := url[strings.LastIndex(url, "/")+1:]
	if qu := q.byName[name]; qu != nil && url == queueURL(name) {
		return qu, nil
	}
	return nil, apiError("QueueDoesNotExist", fmt.Sprintf("The specified queue %s does not exist.", url))
}

// send puts a message on a queue; nil when there is no such queue.
func (q *queues) send(name, body string, now time.Time) *queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	qu := q.byName[name]
	if qu == nil {
		return nil
	}
	q.next++
	m := &queued{id: fmt.Sprintf("%08x-0000-4000-8000-%012x", q.next, q.next), body: body, sent: now}
	qu.messages = append(qu.messages, m)
	close(q.arrived)
	q.arrived = make(chan struct{})
	return m
}

// QueueMessages is how many messages a queue holds, visible or not.
func (a *Account) QueueMessages(name string) int {
	q := &a.queues
	q.mu.Lock()
	defer q.mu.Unlock()
	if qu := q.byName[name]; qu != nil {
		return len(qu.messages)
	}
	return 0
}

// GetQueueUrl returns the URL of a queue by name.
func (s *SQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) { //nolint:revive // the SDK's name
	q := &s.account.queues
	q.mu.Lock()
	defer q.mu.Unlock()
	name := aws.ToString(in.QueueName)
	if q.byName[name] == nil {
		return nil, apiError("QueueDoesNotExist", "The specified queue does not exist.")
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(queueURL(name))}, nil
}

// SendMessage puts a message on a queue.
func (s *SQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q := &s.account.queues
	q.mu.Lock()
	qu, err := q.lookup(aws.ToString(in.QueueUrl))
	q.mu.Unlock()
	if err != nil {
		return nil, err
	}
	body := aws.ToString(in.MessageBody)
	if body == "" {
		return nil, apiError("MissingParameter", "The request must contain the parameter MessageBody.")
	}
	m := q.send(qu.name, body, s.account.now())
	return &sqs.SendMessageOutput{MessageId: aws.String(m.id), MD5OfMessageBody: aws.String(md5Hex(body))}, nil
}

// ReceiveMessage returns up to MaxNumberOfMessages (1–10) visible
// messages, waiting up to WaitTimeSeconds (0–20) for one to arrive. The
// messages returned are hidden for the visibility timeout.
func (s *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	limit, visibility, err := receiveSettings(in)
	if err != nil {
		return nil, err
	}
	wait := time.NewTimer(time.Duration(in.WaitTimeSeconds) * time.Second)
	defer wait.Stop()
	q := &s.account.queues
	for {
		now := s.account.now() // before q.mu: the account sends to queues under its own lock
		out, arrived, err := q.receive(aws.ToString(in.QueueUrl), limit, now, visibility)
		if err != nil {
			return nil, err
		}
		if len(out.Messages) > 0 {
			return out, nil
		}
		again, err := awaitMessages(ctx, arrived, wait.C)
		if err != nil {
			return nil, err
		}
		if !again {
			return out, nil
		}
	}
}

// receiveSettings are how many messages a receive takes at most and how
// long it hides them; out-of-range settings are an error.
func receiveSettings(in *sqs.ReceiveMessageInput) (int, time.Duration, error) {
	limit := int(in.MaxNumberOfMessages)
	if limit == 0 {
		limit = 1
	}
	if limit < 1 || limit > 10 || in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20 {
		return 0, 0, apiError("InvalidParameterValue", "MaxNumberOfMessages must be 1 to 10 and WaitTimeSeconds 0 to 20.")
	}
	visibility := DefaultVisibilityTimeout
	if in.VisibilityTimeout > 0 {
		visibility = time.Duration(in.VisibilityTimeout) * time.Second
	}
	return limit, visibility, nil
}

// receive takes up to limit messages visible at now from the queue at url,
// hiding them for visibility. It also returns the channel that is closed
// when the next message arrives.
func (q *queues) receive(url string, limit int, now time.Time, visibility time.Duration) (*sqs.ReceiveMessageOutput, chan struct{}, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qu, err := q.lookup(url)
	if err != nil {
		return nil, nil, err
	}
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range qu.messages {
		if len(out.Messages) == limit {
			break
		}
		if now.Before(m.invisibleUntil) {
			continue
		}
		out.Messages = append(out.Messages, m.receive(now, visibility))
	}
	return out, q.arrived, nil
}

// receive hands the message out with a new receipt handle and hides it
// for visibility.
func (m *queued) receive(now time.Time, visibility time.Duration) sqstypes.Message {
	m.receives++
	m.invisibleUntil = now.Add(visibility)
	m.receipt = fmt.Sprintf("%s#%d", m.id, m.receives)
	return sqstypes.Message{
		MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.receipt), Body: aws.String(m.body), MD5OfBody: aws.String(md5Hex(m.body)),
	}
}

// awaitMessages waits until a message may be visible: one arrived, or a
// visibility timeout may have ended. It returns false when the long poll
// is over, with the context's error when it was cancelled.
func awaitMessages(ctx context.Context, arrived <-chan struct{}, wait <-chan time.Time) (bool, error) {
	select {
	case <-arrived:
		return true, nil
	case <-wait:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(time.Second): // a message's visibility timeout may have ended
		return true, nil
	}
}

// DeleteMessage deletes a received message by its receipt handle.
func (s *SQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	q := &s.account.queues
	q.mu.Lock()
	defer q.mu.Unlock()
	qu, err := q.lookup(aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	for i, m := range qu.messages {
		if m.receipt != "" && m.receipt == aws.ToString(in.ReceiptHandle) {
			qu.messages = append(qu.messages[:i], qu.messages[i+1:]...)
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, apiError("ReceiptHandleIsInvalid", fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", aws.ToString(in.ReceiptHandle)))
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s)) //nolint:gosec // SQS's own body checksum
	return hex.EncodeToString(sum[:])
}
