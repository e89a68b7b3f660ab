package doctor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// TestToolsAgreeOnGeneratedUserData: on generated AL2 user data, as the
// user data of an AL2 and of a Custom EC2NodeClass, and on generated
// AL2023 user data, as that of an AL2023 and a Custom one, the controller's
// validation blocks launches exactly when the boot outcome says the node
// never joins or joins without karpenter.sh/unregistered; doctor reports
// an error on the EC2NodeClass exactly then; and the simulated kubelet,
// booting the user data as launched for a cluster of other names,
// registers (with the outcome's taints) exactly when the outcome says it
// joins.
func TestToolsAgreeOnGeneratedUserData(t *testing.T) {
	n := boottest.Cases(300)
	cluster := userdata.Cluster{Name: "payments-prod", Endpoint: "https://F00D.yl4.eu-west-1.eks.amazonaws.com", CABundle: "LS0tLS1CRUdJTg==", CIDR: "10.100.0.0/16", DNS: "10.100.0.10"}
	counts := map[string]int{}
	for i := range 3 * n {
		in := boottest.AL2Script(uint64(i / 3))
		families := []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyCustom}
		switch i % 3 {
		case 1:
			g := al2023.Generate(uint64(i / 3))
			in = boottest.Input{Seed: g.Seed, UserData: g.UserData, Constructs: g.Constructs}
			families = []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyCustom}
		case 2:
			in = boottest.BottlerocketSettings(uint64(i / 3))
			families = []string{awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom}
		}
		for _, family := range families {
			o, ok := userdata.Outcome(family, in.UserData)
			if !ok {
				t.Fatalf("input %d (%s): no boot outcome for %s", i, strings.Join(in.Constructs, ", "), family)
			}
			counts[family+" "+string(o.Verdict)]++
			if diff := toolsAgree(family, in.UserData, o, cluster); diff != "" {
				t.Errorf("input %d as %s (%s):\n%s\noutcome: %s\n%s", i, family, strings.Join(in.Constructs, ", "), in.UserData, o.Summary(), diff)
			}
		}
	}
	t.Logf("validation, doctor and the simulated kubelet agree with the boot outcome on %d generated AL2 scripts, %d generated AL2023 user data and %d generated Bottlerocket settings, each as its family and as Custom: %v", n, n, n, counts)
}

func toolsAgree(family, userData string, o boot.Outcome, cluster userdata.Cluster) string {
	var diffs []string
	blocks := slices.ContainsFunc(userdata.Validate(family, userData), func(f userdata.Finding) bool { return f.Severity == userdata.Error })
	if blocks != o.Blocks() {
		diffs = append(diffs, fmt.Sprintf(" validation blocks=%v, the outcome blocks=%v", blocks, o.Blocks()))
	}
	r, err := Diagnose(context.Background(), Input{Now: now, Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{class("generated", family, userData)}}})
	if err != nil {
		return err.Error()
	}
	doctorErr := slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Severity == Error && f.Object == "EC2NodeClass/generated" })
	if doctorErr != o.Blocks() {
		diffs = append(diffs, fmt.Sprintf(" doctor reports an error=%v, the outcome blocks=%v", doctorErr, o.Blocks()))
	}
	launched, err := userdata.Generate(family, cluster, userdata.Node{MaxPods: 58}, userData)
	if err != nil {
		if o.Verdict != boot.NeverJoins {
			diffs = append(diffs, " no launch's user data can be made ("+err.Error()+"); the outcome says "+o.Summary())
		}
		return strings.Join(diffs, "\n")
	}
	reg, err := kubelet.Read(family, base64.StdEncoding.EncodeToString([]byte(launched)))
	var notModelled *kubelet.NotModelledError
	switch {
	case o.Verdict == boot.NotModelled:
		if !errors.As(err, &notModelled) {
			diffs = append(diffs, fmt.Sprintf(" the simulated kubelet boots it (%v)", err))
		}
	case o.Verdict == boot.NeverJoins:
		if err == nil {
			diffs = append(diffs, " the simulated kubelet registers the node")
		}
	case err != nil:
		diffs = append(diffs, " the simulated kubelet does not register: "+err.Error())
	default:
		if fmt.Sprint(reg.Taints) != fmt.Sprint(o.Kubelet.RegisterWithTaints) {
			diffs = append(diffs, fmt.Sprintf(" the simulated kubelet registers with %v", reg.Taints))
		}
	}
	return strings.Join(diffs, "\n")
}
