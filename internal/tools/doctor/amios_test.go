package doctor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// An EC2NodeClass in the shape users write it (cluster orders-eu in
// eu-central-1), with its AMI terms and family.
func termClass(family, term, userData, status string) string {
	doc := "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: nodes}\nspec:\n"
	if family != "" {
		doc += "  amiFamily: " + family + "\n"
	}
	doc += "  amiSelectorTerms: [" + term + "]\n  role: KarpenterNodeRole-orders-eu\n" +
		"  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]\n"
	if userData != "" {
		doc += "  userData: |\n    " + strings.ReplaceAll(strings.TrimRight(userData, "\n"), "\n", "\n    ") + "\n"
	}
	if status != "" {
		doc += "status:\n" + status
	}
	return doc
}

func loadText(t *testing.T, docs ...string) *whatif.Objects {
	t.Helper()
	objs := &whatif.Objects{}
	if err := objs.Load("nodeclass.yaml", strings.NewReader(strings.Join(docs, "---\n"))); err != nil {
		t.Fatal(err)
	}
	return objs
}

// Each AMI term that names an EKS-optimized image of another OS than
// amiFamily says, as threads report them; its twin selects the family's
// own images and is clean.
func TestAMIThatContradictsItsFamily(t *testing.T) {
	const al2Status = "  amis:\n  - {id: ami-0c7f1a2b3d4e5f601, name: amazon-eks-node-1.31-v20250123, requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}\n"
	for _, tc := range []struct {
		name, family, term, userData, status string
		// want: fragments of the finding; "" for a clean twin.
		want []string
	}{
		{name: "AL2023 with an AL2 AMI by name", family: "AL2023", term: "{name: amazon-eks-node-1.31-v20250123}",
			want: []string{"EKS-optimized AL2 image", "bootstrap.sh", "[{alias: al2023@latest}]", "spec.amiFamily to AL2"}},
		{name: "its twin: the AL2023 AMI", family: "AL2023", term: "{name: amazon-eks-node-al2023-x86_64-standard-1.31-v20250123}"},
		{name: "AL2 with an AL2023 AMI by SSM parameter", family: "AL2", term: "{ssmParameter: /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id}",
			want: []string{"EKS-optimized AL2023 image", "nodeadm", "[{alias: al2@latest}]"}},
		{name: "its twin: the AL2 parameter", family: "AL2", term: "{ssmParameter: /aws/service/eks/optimized-ami/1.31/amazon-linux-2/recommended/image_id}"},
		{name: "Bottlerocket with an AL2 AMI", family: "Bottlerocket", term: "{name: amazon-eks-node-1.30-*, owner: amazon}",
			want: []string{"EKS-optimized AL2 image", "[{alias: bottlerocket@latest}]"}},
		{name: "AL2023 with a Bottlerocket AMI", family: "AL2023", term: "{name: bottlerocket-aws-k8s-1.31-x86_64-*}",
			want: []string{"EKS-optimized Bottlerocket image", "not TOML"}},
		{name: "its twin: Bottlerocket's own", family: "Bottlerocket", term: "{name: bottlerocket-aws-k8s-1.31-x86_64-*}"},
		{name: "AL2023 with an Ubuntu EKS AMI", family: "AL2023", term: "{name: ubuntu-eks/k8s_1.31/images/*, owner: \"099720109477\"}",
			want: []string{"EKS-optimized AL2 image", "[{alias: al2023@latest}]"}},
		{name: "its twin: Ubuntu's with AL2, as the upgrade guide says", family: "AL2", term: "{name: ubuntu-eks/k8s_1.31/images/*, owner: \"099720109477\"}"},
		{name: "a dump: selected by id, its status names an AL2 image", family: "AL2023", term: "{id: ami-0c7f1a2b3d4e5f601}", status: al2Status,
			want: []string{"status.amis: ami-0c7f1a2b3d4e5f601 (amazon-eks-node-1.31-v20250123)"}},
		{name: "its twin: AL2 family on the dump", family: "AL2", term: "{id: ami-0c7f1a2b3d4e5f601}", status: al2Status},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := diagnose(t, Input{Objects: loadText(t, termClass(tc.family, tc.term, tc.userData, tc.status))})
			if tc.want == nil {
				expectNone(t, r, CodeAMIFamilyContradicted)
				if r.HasErrors() {
					t.Errorf("the twin has errors: %+v", r.Findings)
				}
				return
			}
			expectOne(t, r, CodeAMIFamilyContradicted, Error, "EC2NodeClass/nodes", tc.want...)
		})
	}
}

// Custom with a stock Bottlerocket AMI and a shell script: the script is
// read as Bottlerocket reads user data.
func TestCustomWithAStockImageIsReadByItsBoot(t *testing.T) {
	script := "#!/bin/bash\n/etc/eks/bootstrap.sh orders-eu --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered=:NoExecute'\n"
	r := diagnose(t, Input{Objects: loadText(t, termClass("Custom", "{name: bottlerocket-aws-k8s-1.31-x86_64-v1.30.0-*, owner: amazon}", script, ""))})
	expectOne(t, r, CodeNodeNeverJoins, Error, "EC2NodeClass/nodes", "not TOML")
	// Its twin: the AL2 image the script is for.
	r = diagnose(t, Input{Objects: loadText(t, termClass("Custom", "{name: amazon-eks-node-1.31-v20250123, owner: amazon}", script, ""))})
	expectNone(t, r, CodeNodeNeverJoins, CodeAMIFamilyContradicted)
}

// With an account, an id term's image says its OS by its name.
func TestResolvedImageContradictsItsFamily(t *testing.T) {
	cloud := simCloud(t, func(a *simaws.Account) {
		a.AddImage(ec2types.Image{ImageId: aws.String("ami-0a2b4c6d8e0f1a3b5"), Name: aws.String("amazon-eks-node-1.31-v20250123"),
			Architecture: ec2types.ArchitectureValuesX8664, State: ec2types.ImageStateAvailable, CreationDate: aws.String("2025-01-23T00:00:00Z")})
	})
	nodePool := corpusPool("general", "nodes", "")
	r := diagnose(t, Input{Objects: loadText(t, termClass("AL2023", "{id: ami-0a2b4c6d8e0f1a3b5}", "", ""), nodePool), Cloud: cloud})
	expectOne(t, r, CodeAMIFamilyContradicted, Error, "EC2NodeClass/nodes", "the account resolves", "ami-0a2b4c6d8e0f1a3b5 (amazon-eks-node-1.31-v20250123)")
}

// Aliases whose version no image has.
func TestMalformedAlias(t *testing.T) {
	for _, tc := range []struct {
		alias string
		bad   bool
	}{
		{"al2023@latest@foo", true}, {"al2023@20250123", true}, {"bottlerocket@latest-1", true}, {"al2@v2025", true},
		{"al2023@latest", false}, {"al2023@v20250123", false}, {"bottlerocket@v1.30.0", false}, {"bottlerocket@1.30.0", false}, {"al2@v20240807", false},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			r := diagnose(t, Input{Objects: loadText(t, termClass("", fmt.Sprintf("{alias: %q}", tc.alias), "", ""))})
			if !tc.bad {
				expectNone(t, r, CodeAliasMalformed)
				return
			}
			f := expectOne(t, r, CodeAliasMalformed, Error, "EC2NodeClass/nodes", "spec.amiSelectorTerms[0].alias")
			family, _, _ := strings.Cut(tc.alias, "@")
			if !strings.Contains(f.Fix, family+"@latest") {
				t.Errorf("the fix names no alias to use: %s", f.Fix)
			}
		})
	}
}
