package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// The threads: real users' inputs from the reference's and
// amazon-eks-ami's public issues, each written again in the user's own
// shape (their API versions, names, accounts and regions) with the cause
// the thread states, and its twin with the cause fixed
// (testdata/threads/<issue>/{broken,fixed}.yaml; the README lists the
// threads). doctor must name the cause on the object, with a fix a user
// can paste, on the broken input, and have no finding of that code and
// no error on the twin. A cause kubectl apply itself refuses is a
// refusal naming the field.
type thread struct {
	dir, url string
	// code, severity and object of the finding that names the cause;
	// want are fragments of its message, evidence and fix together.
	code     string
	severity Severity
	object   string
	want     []string
	// refused: the broken input is refused with these fragments.
	refused []string
	// cloud sets the account up for the broken input and the fixed one.
	cloud func(broken bool) func(*simaws.Account)
}

var threads = []thread{
	{dir: "6659", url: "https://github.com/aws/karpenter-provider-aws/issues/6659", code: CodeControllerRoleAsNodeRole, severity: Error, object: "EC2NodeClass/default",
		want: []string{"Karpenter-Role is the controller's own role", "ServiceAccount karpenter/karpenter's eks.amazonaws.com/role-arn", "KarpenterNodeRole-dev-eks"}},
	{dir: "5594", url: "https://github.com/aws/karpenter-provider-aws/issues/5594", code: CodeControllerRoleAsNodeRole, severity: Warning, object: "EC2NodeClass/default",
		want: []string{"named as a controller's role", "set spec.role to the node role"}},
	{dir: "7558", url: "https://github.com/aws/karpenter-provider-aws/issues/7558", code: CodeNodeRoleNotMapped, severity: Error, object: "EC2NodeClass/default",
		want: []string{"STANDARD", "EC2_LINUX"},
		cloud: func(broken bool) func(*simaws.Account) {
			return func(a *simaws.Account) {
				entry := "EC2_LINUX"
				if broken {
					entry = "STANDARD"
				}
				a.AddAccessEntry("arn:aws:iam::"+account.AccountID+":role/karpenter-node-beta4-cluster", entry)
			}
		}},
	{dir: "7235", url: "https://github.com/aws/karpenter-provider-aws/issues/7235", code: CodeKubeletAnnotation, severity: Warning, object: "NodePool/default-ebs",
		want: []string{"differs from EC2NodeClass default-ebs's spec.kubelet", "169.254.20.11", "172.20.0.10", "remove annotation compatibility.karpenter.sh/v1beta1-kubelet-conversion from NodePool default-ebs"}},
	{dir: "5154", url: "https://github.com/aws/karpenter-provider-aws/issues/5154",
		refused: []string{"broken.yaml:", "consolidateAfter (30s) with consolidationPolicy WhenUnderutilized", "consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30s"}},
	{dir: "5712", url: "https://github.com/aws/karpenter-provider-aws/issues/5712", code: CodeConverted, severity: Warning, object: "NodePool/karpenter",
		want: []string{"karpenter.sh/v1alpha5 Provisioner", "v0.33 and later serve no v1alpha5", "ttlSecondsUntilExpired 2592000 is expireAfter 720h", "nodewright convert -f"}},
	{dir: "7535", url: "https://github.com/aws/karpenter-provider-aws/issues/7535",
		refused: []string{"broken.yaml:14:", `unknown field "spec.template.spec.labels"`, "spec.template.metadata.labels"}},
	{dir: "8312", url: "https://github.com/aws/karpenter-provider-aws/issues/8312", code: CodeIdentityNotAName, severity: Error, object: "EC2NodeClass/default",
		want: []string{"spec.instanceProfile is an ARN", "set spec.instanceProfile to KarpenterNodeInstanceProfile-cluster-33"}},
	{dir: "2098", url: "https://github.com/aws/karpenter-provider-aws/issues/2098", code: CodeUserDataUnreadable, severity: Error, object: "EC2NodeClass/al2",
		want: []string{"cannot be read as a MIME document", "add an empty line between the document's headers"}},
	{dir: "5915", url: "https://github.com/aws/karpenter-provider-aws/issues/5915", code: CodeUserDataUnreadable, severity: Error, object: "EC2NodeClass/bottlerocket-nodetemplate",
		want: []string{"not TOML", "userData: |", "userData: >"}},
	{dir: "2123", url: "https://github.com/awslabs/amazon-eks-ami/issues/2123", code: CodeNodeNeverJoins, severity: Error, object: "EC2NodeClass/al2023",
		want: []string{"name is missing in cluster configuration"}},
	{dir: "2318", url: "https://github.com/awslabs/amazon-eks-ami/issues/2318", code: CodeUserDataUnreadable, severity: Error, object: "EC2NodeClass/graviton",
		want: []string{`before "#!/bin/bash"`}},
	{dir: "4362", url: "https://github.com/aws/karpenter-provider-aws/issues/4362", code: CodeRequirementOnNoLabel, severity: Warning, object: "NodePool/default",
		want: []string{"node.kubernetes.io/instance-family chooses no instance type", "key to karpenter.k8s.aws/instance-family"}},
	{dir: "5521", url: "https://github.com/aws/karpenter-provider-aws/issues/5521", code: CodeRequirementOnNoLabel, severity: Warning, object: "NodePool/general",
		want: []string{"eks.amazonaws.com/capacityType", "key to karpenter.sh/capacity-type (values: [on-demand, spot])"}},
	{dir: "3075", url: "https://github.com/aws/karpenter-provider-aws/issues/3075", code: CodePodIncompatible, severity: Error, object: "StatefulSet/streaming/kafka",
		want: []string{"node-type", `add node-type: "StatefulSet" to its spec.template.metadata.labels`}},
	{dir: "2316", url: "https://github.com/aws/karpenter-provider-aws/issues/2316", code: CodePodIncompatible, severity: Error, object: "Deployment/backend/api",
		want: []string{"application", `add application: "api" to its spec.template.metadata.labels`}},
	{dir: "5645", url: "https://github.com/aws/karpenter-provider-aws/issues/5645", code: CodePodIncompatible, severity: Error, object: "Job/data/nightly-etl",
		want: []string{"from karpenter.sh/provisioner-name to karpenter.sh/nodepool (value batch)"}},
	{dir: "3557", url: "https://github.com/aws/karpenter-provider-aws/issues/3557", code: CodeNodeRoleNotMapped, severity: Error, object: "EC2NodeClass/default",
		want: []string{"KarpenterNodeRole-payments-prod", "rolearn: arn:aws:iam::444455556666:role/KarpenterNodeRole-payments-prod"}},
	{dir: "6821", url: "https://github.com/aws/karpenter-provider-aws/issues/6821", code: CodeCustomMissingUnregistered, severity: Error, object: "EC2NodeClass/custom-al2",
		want: []string{"karpenter.sh/unregistered"}},
	{dir: "4708", url: "https://github.com/aws/karpenter-provider-aws/issues/4708", code: CodeCustomMissingUnregistered, severity: Error, object: "EC2NodeClass/aws",
		want: []string{"the user data is empty"}},
	{dir: "7486", url: "https://github.com/aws/karpenter-provider-aws/issues/7486", code: CodeUserDataOverridesTaints, severity: Error, object: "EC2NodeClass/default",
		want: []string{"node.cilium.io/agent-not-ready", "startupTaints"}},
	{dir: "7660", url: "https://github.com/aws/karpenter-provider-aws/issues/7660", code: CodeAMIFamilyContradicted, severity: Error, object: "EC2NodeClass/default-al2023",
		want: []string{"EKS-optimized AL2 image", "[{alias: al2023@latest}]"}},
	{dir: "9800", url: "https://github.com/aws/karpenter-provider-aws/issues/9800", code: CodeAliasMalformed, severity: Error, object: "EC2NodeClass/default",
		want: []string{`"al2023@latest@foo" has a second '@'`, "al2023@latest"}},
	{dir: "4192", url: "https://github.com/aws/karpenter-provider-aws/issues/4192", code: CodePodIncompatible, severity: Error, object: "Pod/db/postgres-0",
		want: []string{"PersistentVolumes are in different zones (pv-data in us-east-1a; pv-logs in us-east-1b)", "StorageClass gp3's volumeBindingMode to WaitForFirstConsumer"}},
	{dir: "5176", url: "https://github.com/aws/karpenter-provider-aws/issues/5176", code: CodeAMINotFound, severity: Error, object: "EC2NodeClass/default",
		want: []string{"amiFamily Ubuntu without amiSelectorTerms", "099720109477"}},
	{dir: "7200", url: "https://github.com/aws/karpenter-provider-aws/issues/7200", code: CodeConverted, severity: Warning, object: "EC2NodeClass/default",
		want: []string{"v1 defaults it to 1", "httpPutResponseHopLimit: 2", "EBS CSI driver"}},
}

func TestThreads(t *testing.T) {
	if len(threads) < 25 {
		t.Errorf("the corpus has %d threads, fewer than 25", len(threads))
	}
	for _, th := range threads {
		t.Run(th.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "threads", th.dir)
			var cloud func(bool) *Cloud
			if th.cloud != nil {
				cloud = func(broken bool) *Cloud { return simCloud(t, th.cloud(broken)) }
			}
			r, err := doctorOnFile(t, filepath.Join(dir, "broken.yaml"), cloud, true)
			switch {
			case th.refused != nil:
				if err == nil {
					t.Fatalf("the broken input was read: %+v", r.Findings)
				}
				for _, w := range th.refused {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the refusal %q does not say %q", err, w)
					}
				}
			case err != nil:
				t.Fatal(err)
			default:
				f := expectOn(t, r, th.code, th.severity, th.object)
				text := f.Message + " " + f.Evidence + " " + f.Fix
				for _, w := range th.want {
					if !strings.Contains(text, w) {
						t.Errorf("%s does not say %q:\n%s", th.code, w, text)
					}
				}
				if f.File == "" || f.Line == 0 {
					t.Errorf("the finding names no file and line: %+v", f)
				}
			}
			r, err = doctorOnFile(t, filepath.Join(dir, "fixed.yaml"), cloud, false)
			if err != nil {
				t.Fatalf("the fixed twin is refused: %v", err)
			}
			if th.code != "" {
				for _, f := range only(r, th.code) {
					if f.Object == th.object {
						t.Errorf("the fixed twin still has %s: %s", th.code, f.Message)
					}
				}
			}
			for _, f := range r.Findings {
				if f.Severity == Error {
					t.Errorf("the fixed twin has an error: %s %s: %s", f.Code, f.Object, f.Message)
				}
			}
		})
	}
}

func doctorOnFile(t *testing.T, path string, cloud func(bool) *Cloud, broken bool) (*Report, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs := &whatif.Objects{}
	if err := objs.Load(path, f); err != nil {
		return nil, err
	}
	in := Input{Objects: objs, Now: now}
	if cloud != nil {
		in.Cloud = cloud(broken)
	}
	r, err := Diagnose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, r.Findings...)
	return r, nil
}
