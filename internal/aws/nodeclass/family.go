package nodeclass

import (
	"strings"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Family is the EC2NodeClass's AMI family, taken from its alias when
// amiFamily is not set.
func Family(nc *awsv1.EC2NodeClass) string {
	if nc.Spec.AMIFamily != nil {
		return *nc.Spec.AMIFamily
	}
	for _, t := range nc.Spec.AMISelectorTerms {
		if family, _, ok := strings.Cut(t.Alias, "@"); ok {
			for _, f := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
				if strings.EqualFold(f, family) {
					return f
				}
			}
		}
	}
	return awsv1.AMIFamilyCustom
}
