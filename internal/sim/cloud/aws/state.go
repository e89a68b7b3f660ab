package aws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// GetConsoleOutput returns what an instance printed, base64-encoded as EC2
// returns it.
func (e *EC2) GetConsoleOutput(ctx context.Context, in *ec2.GetConsoleOutputInput, _ ...func(*ec2.Options)) (*ec2.GetConsoleOutputOutput, error) {
	if err := e.account.call(ctx, ec2Call("GetConsoleOutput")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	id := aws.ToString(in.InstanceId)
	inst := a.instance(id)
	if inst == nil {
		return nil, apiError("InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
	}
	out := &ec2.GetConsoleOutputOutput{InstanceId: aws.String(id), Timestamp: aws.Time(a.clock.Now())}
	if inst.ConsoleOutput != "" {
		out.Output = aws.String(base64.StdEncoding.EncodeToString([]byte(inst.ConsoleOutput)))
	}
	return out, nil
}

// State is what changes in an account while a simulation runs: its
// instances (with their console output), instance profiles and access
// entries. Saved by a running simulation so that another process (such as
// nodewright doctor --cloud sim) sees the same account.
type State struct {
	Instances     []Instance                           `json:"instances"`
	Profiles      map[string]*iamtypes.InstanceProfile `json:"profiles"`
	AccessEntries map[string]string                    `json:"accessEntries"`
}

// StateFile is the name of the file a simulation saves its account's
// state to, beside its kubeconfig.
const StateFile = "aws-account.json"

// SaveState writes the account's state to path atomically.
func (a *Account) SaveState(path string) error {
	a.mu.Lock()
	a.advance()
	st := State{Profiles: a.profiles, AccessEntries: a.accessEntries}
	for _, i := range a.instances {
		st.Instances = append(st.Instances, *i)
	}
	data, err := json.Marshal(st)
	a.mu.Unlock()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".aws-account-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadState replaces the account's instances, instance profiles and access
// entries with a saved state.
func (a *Account) LoadState(r io.Reader) error {
	var st State
	if err := json.NewDecoder(r).Decode(&st); err != nil {
		return fmt.Errorf("reading the simulated account's state: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.instances = a.instances[:0]
	for i := range st.Instances {
		a.instances = append(a.instances, &st.Instances[i])
	}
	if st.Profiles != nil {
		a.profiles = st.Profiles
	}
	if st.AccessEntries != nil {
		a.accessEntries = st.AccessEntries
	}
	return nil
}
