package aws

import (
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"k8s.io/utils/clock"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

const accountID = account.AccountID

// Account is the simulated AWS account: the state behind its EC2 and SSM.
// It is safe for concurrent use.
type Account struct {
	mu             sync.Mutex
	subnets        []ec2types.Subnet
	securityGroups []ec2types.SecurityGroup
	images         []ec2types.Image
	parameters     map[string]string
	roles          map[string]bool
	profiles       map[string]*iamtypes.InstanceProfile
	catalog        []instancetypes.Spec
	templates      map[string]*launchTemplate
	instances      []*Instance
	fleets         map[string]*ec2.CreateFleetOutput
	// fleetRequests are the requests of fleets, by client token.
	fleetRequests map[string]string
	unavailable   map[string]bool
	accessEntries map[string]string // principal ARN → type
	reservations  []*ec2types.CapacityReservation
	placement     []ec2types.PlacementGroup
	// partition is the last partition each partition group placed an
	// instance in.
	partition map[string]int32
	faults    Faults
	// pendingFor and shuttingDownFor are how long instances stay in
	// those states.
	pendingFor, shuttingDownFor time.Duration
	stats                       Stats
	clock                       clock.PassiveClock
	overHTTP                    bool
	buckets                     map[string]*tokenBucket
	// queues are the account's SQS queues; eventQueue the one its
	// EC2 and Health events go to, notice how long an interrupted
	// instance has left; events counts the events sent.
	queues     queues
	eventQueue string
	notice     time.Duration
	events     int
}

// NewAccount returns an empty account; Seed fills it with the scenarios'
// facts.
func NewAccount() *Account {
	return &Account{
		parameters: map[string]string{}, roles: map[string]bool{}, profiles: map[string]*iamtypes.InstanceProfile{},
		templates: map[string]*launchTemplate{}, fleets: map[string]*ec2.CreateFleetOutput{}, fleetRequests: map[string]string{}, unavailable: map[string]bool{},
		accessEntries: map[string]string{}, partition: map[string]int32{},
		clock: clock.RealClock{},
	}
}

// now is the account's time.
func (a *Account) now() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clock.Now()
}

// SetClock sets the clock launch times are read from.
func (a *Account) SetClock(c clock.PassiveClock) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clock = c
}

// AddSubnet adds a subnet. AddSecurityGroup, AddImage and SetParameter
// likewise populate the account.
func (a *Account) AddSubnet(s ec2types.Subnet) {
	a.mu.Lock()
	a.subnets = append(a.subnets, s)
	a.mu.Unlock()
}

// AddSecurityGroup adds a security group.
func (a *Account) AddSecurityGroup(g ec2types.SecurityGroup) {
	a.mu.Lock()
	a.securityGroups = append(a.securityGroups, g)
	a.mu.Unlock()
}

// AddImage registers an AMI.
func (a *Account) AddImage(i ec2types.Image) {
	a.mu.Lock()
	a.images = append(a.images, i)
	a.mu.Unlock()
}

// SetParameter sets an SSM parameter.
func (a *Account) SetParameter(name, value string) {
	a.mu.Lock()
	a.parameters[name] = value
	a.mu.Unlock()
}

// EC2 returns the account's EC2 API.
func (a *Account) EC2() *EC2 { return &EC2{account: a} }

// SSM returns the account's SSM API.
func (a *Account) SSM() *SSM { return &SSM{account: a} }
