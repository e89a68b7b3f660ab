package userdata

import (
	"strings"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/al2"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/bottlerocket"
	"github.com/nodewright/nodewright/internal/aws/boot/cloudinit"
	"github.com/nodewright/nodewright/internal/aws/boot/windows"
)

// Codes of the boot outcome.
const (
	// CodeNeverJoins: as the node reads its user data, the boot stops
	// before the kubelet registers (a script that never starts it, a
	// bootstrap.sh call it refuses, a kubelet argument the kubelet exits
	// on).
	CodeNeverJoins = "userdata-node-never-joins"
	// CodeNotModelled: what the node does depends on something the boot
	// model does not read; no verdict either way.
	CodeNotModelled = "userdata-boot-not-modelled"
)

// Outcome is what a node of the family makes of the user data as it is
// launched (nodewright's bootstrap merged in, for a node of a typical
// cluster), for the families whose boot is modelled in package boot; ok
// is false for the others.
func Outcome(family, userData string) (o boot.Outcome, ok bool) {
	return outcome(family, "", userData)
}

// outcome is Outcome on an image of the family given ("" when its name
// does not say).
func outcome(family, imageFamily, userData string) (o boot.Outcome, ok bool) {
	launched := userData
	if family != awsv1.AMIFamilyCustom {
		var err error
		if launched, err = Generate(family, TypicalCluster, Node{MaxPods: 110}, userData); err != nil {
			return boot.Never("nodewright cannot make a launch's user data from it, so no node is launched: " + err.Error()), true
		}
	}
	o, model := BootImage(family, imageFamily, []byte(launched), 110)
	return o, model != ""
}

// Boot is what a node of the family makes of the user data it is
// launched with, by the boot model of its image's family (model, "" when
// no model reads it): a Custom AMI's is read by the family its user data
// is for. maxPods is the pod limit the image works out for the instance
// type (0: not known).
func Boot(family string, launched []byte, maxPods int32) (o boot.Outcome, model string) {
	return BootImage(family, "", launched, maxPods)
}

// BootImage is Boot on an image whose name says which family's boot it
// runs (imageFamily, "" when it does not): a Custom AMI's user data is
// then read as that image reads it, whatever it holds.
func BootImage(family, imageFamily string, launched []byte, maxPods int32) (o boot.Outcome, model string) {
	if family == awsv1.AMIFamilyCustom {
		if imageFamily != "" {
			o, model = BootImage(imageFamily, "", launched, maxPods)
			if model != "" {
				o.Notes = append(o.Notes, "the AMI is an EKS-optimized "+imageFamily+" image (its name says so): it reads the user data as "+imageFamily+" does")
			}
			return o, model
		}
		family = customBoot(string(launched))
	}
	if model, ok := bootModels[family]; ok {
		return model(launched, maxPods), family
	}
	return boot.Outcome{}, ""
}

// bootModels are the families whose boot is modelled (package boot, a
// folder each), by family: a new family's model is added here.
var bootModels = map[string]func(launched []byte, maxPods int32) boot.Outcome{
	awsv1.AMIFamilyAL2:          func(b []byte, m int32) boot.Outcome { return al2.Boot(b, al2.Machine{MaxPods: m}) },
	awsv1.AMIFamilyAL2023:       func(b []byte, m int32) boot.Outcome { return al2023.Boot(b, al2023.Machine{MaxPods: m}) },
	awsv1.AMIFamilyBottlerocket: func(b []byte, m int32) boot.Outcome { return bottlerocket.Boot(b, bottlerocket.Machine{MaxPods: m}) },
	awsv1.AMIFamilyWindows2019:  windowsBoot,
	awsv1.AMIFamilyWindows2022:  windowsBoot,
	awsv1.AMIFamilyWindows2025:  windowsBoot,
}

func windowsBoot(b []byte, m int32) boot.Outcome { return windows.Boot(b, windows.Machine{MaxPods: m}) }

// bootFamily is the family whose boot reads user data of a family: its
// own, or for Custom the image's family (when its name says it) or the
// one its user data is for.
func bootFamily(family, imageFamily, userData string) string {
	switch {
	case family != awsv1.AMIFamilyCustom:
		return family
	case imageFamily != "":
		return imageFamily
	}
	return customBoot(userData)
}

// customBoot is the family whose boot a Custom AMI's user data is for,
// read from what it holds: a <powershell> block is Windows'; Bottlerocket settings are Bottlerocket's; a
// NodeConfig, or a script that runs nodeadm or writes its drop-ins, is
// AL2023's; scripts and cloud-config otherwise are AL2's (bootstrap.sh,
// or nothing that starts the kubelet).
func customBoot(userData string) string {
	data := []byte(userData)
	if windows.IsPowerShell(data) {
		return awsv1.AMIFamilyWindows2022 // EC2Launch runs it; the build does not change the reading
	}
	if unwrapped, err := al2023.Unwrap(data); err == nil {
		data = unwrapped // gzip (and nodeadm's base64) undone, as every reader does
	}
	parts, err := cloudinit.Split(data)
	if err != nil {
		return awsv1.AMIFamilyAL2
	}
	family := awsv1.AMIFamilyAL2
	for _, p := range parts {
		switch ct := cloudinit.Type(p); {
		case ct == ContentTypeTOML:
			return awsv1.AMIFamilyBottlerocket
		case ct == ContentTypeNodeadm, strings.Contains(string(p.Body), "nodeadm"):
			family = awsv1.AMIFamilyAL2023
		}
	}
	return family
}

// judged makes the findings agree with the boot outcome: a launch is
// blocked only when the node never joins or joins without
// karpenter.sh/unregistered. An Error the outcome does not bear out
// becomes a Warning; an outcome that blocks gets an Error when no finding
// says why; an outcome that is not modelled is named.
func judged(findings []Finding, o boot.Outcome) []Finding {
	blocking := false
	for i, f := range findings {
		if f.Severity != Error || f.Code == CodeTooLarge {
			continue
		}
		if !o.Blocks() {
			findings[i].Severity = Warning
			findings[i].Message += "; as the node reads it, though, it " + o.Summary()
			continue
		}
		blocking = true
	}
	switch {
	case o.Verdict == boot.NotModelled:
		findings = append(findings, Finding{Code: CodeNotModelled, Severity: Warning,
			Message: "what the node does with this user data is not modelled: " + o.Why,
			Fix:     "check the boot on a node: launch one from the EC2NodeClass and read its cloud-init log (/var/log/cloud-init-output.log) and the kubelet's (journalctl -u kubelet)"})
	case o.Blocks() && !blocking:
		findings = append(findings, outcomeFinding(o))
	}
	return findings
}

// outcomeFinding is the Error for a blocking outcome no other finding
// explains.
func outcomeFinding(o boot.Outcome) Finding {
	if o.Verdict == boot.NeverJoins {
		return Finding{Code: CodeNeverJoins, Severity: Error,
			Message: "as the node reads its user data it never joins the cluster: " + o.Why,
			Fix:     "correct what stops the boot (the argument or the part named); nodewright launches nothing from the EC2NodeClass until then"}
	}
	return missingUnregistered(nil, "as the node reads its user data it "+o.Summary())
}

// OnImage is what an image of imageFamily makes of what nodewright
// launches for a class of family (its user data merged with nodewright's
// bootstrap for that family): how a node boots when a class's AMI is of
// another family than its amiFamily says. ok is false when no model
// reads the image's boot.
func OnImage(family, imageFamily, userData string) (o boot.Outcome, ok bool) {
	launched := userData
	if family != awsv1.AMIFamilyCustom {
		var err error
		if launched, err = Generate(family, TypicalCluster, Node{MaxPods: 110}, userData); err != nil {
			return boot.Never("nodewright cannot make a launch's user data from it: " + err.Error()), true
		}
	}
	o, model := BootImage(imageFamily, "", []byte(launched), 110)
	return o, model != ""
}
