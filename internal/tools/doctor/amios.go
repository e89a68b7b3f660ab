package doctor

import (
	"fmt"
	"regexp"
	"strings"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// Codes of the AMI terms' own shape.
const (
	// CodeAMIFamilyContradicted: an AMI term selects the EKS-optimized
	// image of another OS than amiFamily says, whose boot does not read
	// what nodewright launches for the family.
	CodeAMIFamilyContradicted = "ami-os-contradicts-family"
	// CodeAliasMalformed: an alias whose version no AMI has.
	CodeAliasMalformed = "ami-alias-malformed"
)

// aliasVersions are the versions each alias family's images are
// published under (besides latest): AL2's and AL2023's by date, as
// v20250123; Bottlerocket's by release, as v1.30.0 or 1.30.0.
var aliasVersions = map[string]*regexp.Regexp{
	"al2":          regexp.MustCompile(`^v[0-9]{8}$`),
	"al2023":       regexp.MustCompile(`^v[0-9]{8}$`),
	"bottlerocket": regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`),
}

// aliasOf is the alias of a family's EKS-optimized images.
func aliasOf(family string) string {
	if family == awsv1.AMIFamilyCustom || family == "" {
		return ""
	}
	return strings.ToLower(family) + "@latest"
}

// amiTermRule checks each AMI selector term that names its images: an
// alias's version, and the OS an EKS-optimized image's name or SSM path
// says against the class's amiFamily, by booting what nodewright launches
// for the family with the image's own boot (package boot).
func amiTermRule(r *Report, o *whatif.Objects) {
	for _, nc := range o.EC2NodeClasses {
		object := "EC2NodeClass/" + nc.Name
		family := nodeclass.Family(nc)
		for i, t := range nc.Spec.AMISelectorTerms {
			field := fmt.Sprintf("spec.amiSelectorTerms[%d]", i)
			if t.Alias != "" {
				aliasRule(r, object, field, t.Alias)
				continue
			}
			name, what := t.Name, "name"
			if t.SSMParameter != "" {
				name, what = t.SSMParameter, "ssmParameter"
			}
			image := boot.ImageFamily(name)
			if image == "" || image == family || family == awsv1.AMIFamilyCustom {
				continue // Custom's user data is read by the image's boot (userdata-* findings)
			}
			familyContradicted(r, nc, object, fmt.Sprintf("%s.%s: %s", field, what, name), family, image)
		}
		// A dump's resolved images say their OS by name too.
		for _, ami := range nc.Status.AMIs {
			image := boot.ImageFamily(ami.Name)
			if image == "" || image == family || family == awsv1.AMIFamilyCustom || !selectsByName(nc) {
				continue
			}
			familyContradicted(r, nc, object, fmt.Sprintf("status.amis: %s (%s)", ami.ID, ami.Name), family, image)
			break
		}
	}
}

// selectsByName: the class selects images by id or tags (whose OS only
// their names in the status say), so the status is worth reading.
func selectsByName(nc *awsv1.EC2NodeClass) bool {
	for _, t := range nc.Spec.AMISelectorTerms {
		if t.Alias != "" || t.Name != "" || t.SSMParameter != "" {
			return false
		}
	}
	return true
}

func aliasRule(r *Report, object, field, alias string) {
	family, version, _ := strings.Cut(alias, "@")
	pattern := aliasVersions[family]
	switch {
	case strings.Contains(version, "@"):
		r.add(Finding{Code: CodeAliasMalformed, Severity: Error, Object: object,
			Message:  fmt.Sprintf("%s's %s.alias %q has a second '@': its version %q is no image's, so no AMI resolves and nothing launches (Karpenter's controller crash-loops on it, aws/karpenter-provider-aws#9800)", object, field, alias, version),
			Evidence: fmt.Sprintf("%s.alias: %s", field, alias),
			Fix:      aliasFix(object, field, family)})
	case version != "latest" && pattern != nil && !pattern.MatchString(version):
		r.add(Finding{Code: CodeAliasMalformed, Severity: Error, Object: object,
			Message:  fmt.Sprintf("%s's %s.alias %q names version %q, which is not how %s images are released, so no AMI resolves and nothing launches", object, field, alias, version, family),
			Evidence: fmt.Sprintf("%s.alias: %s", field, alias),
			Fix:      aliasFix(object, field, family)})
	}
}

func aliasFix(object, field, family string) string {
	return fmt.Sprintf("replace the value in %s's %s with %s@latest (the newest release, followed as it comes) or one pinned release such as %s", object, field, family, aliasExample(family))
}

func aliasExample(family string) string {
	if family == "bottlerocket" {
		return "bottlerocket@v1.30.0"
	}
	return family + "@v20250123"
}

// familyContradicted reports a class whose image boots as another family:
// what that boot makes of what nodewright launches for the class's.
func familyContradicted(r *Report, nc *awsv1.EC2NodeClass, object, evidence, family, image string) {
	userData := ""
	if nc.Spec.UserData != nil {
		userData = *nc.Spec.UserData
	}
	o, modelled := userdata.OnImage(family, image, userData)
	if modelled && o.Verdict == boot.Joins {
		return
	}
	why := "its boot does not read what nodewright launches for " + family
	if modelled && o.Why != "" {
		why = o.Why
	}
	fix := fmt.Sprintf("select %s images: set spec.amiSelectorTerms to [{alias: %s}]", family, aliasOf(family))
	if family == "" || aliasOf(family) == "" {
		fix = "select images of the family the user data is for"
	}
	fix += fmt.Sprintf(", or, to keep this AMI, set spec.amiFamily to %s (and write spec.userData for %s)", image, image)
	severity := Error
	if !modelled {
		severity = Warning
	}
	r.add(Finding{Code: CodeAMIFamilyContradicted, Severity: severity, Object: object,
		Message: fmt.Sprintf("EC2NodeClass %s's amiFamily is %s but its AMI is an EKS-optimized %s image (its name says so), which boots as %s does: the node never joins: %s",
			nc.Name, family, image, image, why),
		Evidence: evidence,
		Fix:      fix})
}

// resolvedFamilyRule checks the images the account resolved for a class
// that selects by id or tags: their names say their OS.
func resolvedFamilyRule(r *Report, nc *awsv1.EC2NodeClass, have amiArchs) {
	family := nodeclass.Family(nc)
	if family == awsv1.AMIFamilyCustom || !selectsByName(nc) || len(nc.Status.AMIs) > 0 {
		return // Custom is read by the image's boot; a status was read already
	}
	for _, a := range have.resolved {
		if image := boot.ImageFamily(a[1]); image != "" && image != family {
			familyContradicted(r, nc, "EC2NodeClass/"+nc.Name, fmt.Sprintf("the account resolves %s to %s (%s)", nodeclass.DescribeAMITerms(nc.Spec.AMISelectorTerms), a[0], a[1]), family, image)
			return
		}
	}
}
