package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// SSM is the simulated SSM API of an account.
type SSM struct{ account *Account }

// GetParameter returns a parameter, or ParameterNotFound.
func (s *SSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if err := s.account.call(ctx, serviceCall("GetParameter")); err != nil {
		return nil, err
	}
	s.account.mu.Lock()
	defer s.account.mu.Unlock()
	name := deref(in.Name)
	value, ok := s.account.parameters[name]
	if !ok {
		return nil, apiError("ParameterNotFound", "Parameter "+name+" not found.")
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: &name, Value: &value, Type: ssmtypes.ParameterTypeString}}, nil
}
