package v1

import "strings"

// Windows builds, the node.kubernetes.io/windows-build value of the
// Windows Server release each Windows family runs.
const (
	Windows2019Build = "10.0.17763"
	Windows2022Build = "10.0.20348"
	Windows2025Build = "10.0.26100"
)

// FamilyOf is the EC2NodeClass's AMI family: spec.amiFamily, else the
// family of its alias, else Custom.
func FamilyOf(nc *EC2NodeClass) string {
	if nc.Spec.AMIFamily != nil {
		return *nc.Spec.AMIFamily
	}
	for _, t := range nc.Spec.AMISelectorTerms {
		if family, _, ok := strings.Cut(t.Alias, "@"); ok {
			for _, f := range []string{AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyWindows2025} {
				if strings.EqualFold(f, family) {
					return f
				}
			}
		}
	}
	return AMIFamilyCustom
}

// WindowsBuild is the Windows build nodes of an AMI family run, "" for
// the Linux families and Custom.
func WindowsBuild(family string) string {
	switch family {
	case AMIFamilyWindows2019:
		return Windows2019Build
	case AMIFamilyWindows2022:
		return Windows2022Build
	case AMIFamilyWindows2025:
		return Windows2025Build
	}
	return ""
}

// IsWindows reports whether nodes of the AMI family run Windows.
func IsWindows(family string) bool { return WindowsBuild(family) != "" }
