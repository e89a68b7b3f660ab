package aws_test

import (
	"github.com/nodewright/nodewright/internal/aws/sdk"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// The simulated services that are complete have the SDK's interfaces.
var (
	_ sdk.SSM = (*simaws.SSM)(nil)
	_ sdk.IAM = (*simaws.IAM)(nil)
)

var _ sdk.Pricing = (*simaws.Pricing)(nil)

// The whole simulated EC2 API has the SDK's signatures.
var _ sdk.EC2 = (*simaws.EC2)(nil)

var _ sdk.EKS = (*simaws.EKS)(nil)

var (
	_ sdk.Console       = (*simaws.EC2)(nil)
	_ sdk.AccessEntries = (*simaws.EKS)(nil)
)
