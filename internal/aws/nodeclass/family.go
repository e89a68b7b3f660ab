package nodeclass

import (
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Family is the EC2NodeClass's AMI family, taken from its alias when
// amiFamily is not set.
func Family(nc *awsv1.EC2NodeClass) string { return awsv1.FamilyOf(nc) }
