package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	yamlv3 "gopkg.in/yaml.v3"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/charts"
)

// The install pages work as written: their shell blocks run, in order,
// with the variables a user sets (another cluster name, account and
// region than the examples'), the AWS commands against moto (an AWS
// implementation written elsewhere), and the commands that need a
// registry or a cluster recorded with their arguments. Then the names
// must agree: the roles and queue the commands made are the ones the
// chart, rendered with the page's helm flags, and the page's
// EC2NodeClass name, and the controller's policy is docs/iam-policy.json
// for them.
func TestInstallOnEKSAsDocumented(t *testing.T) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatal("moto_server is not on PATH: install it with pip install 'moto[server]' (.ci/run does)")
	}
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatal("the AWS CLI is not on PATH: the install's commands run with it (.ci/run installs it)")
	}
	install := docBlocks(t, "docs/install-eks.md")
	migrate := docBlocks(t, "docs/migrate-from-karpenter.md")
	common := []string{block(t, install, "export CLUSTER_NAME="), block(t, install, "make image chart")}
	tail := []string{block(t, install, "helm install "), block(t, install, "kind: NodePool")}
	for _, v := range []struct {
		name   string
		blocks []string
		irsa   bool
		// passed is the node role the controller may pass to EC2.
		passed string
	}{
		{name: "pod identity", blocks: []string{block(t, install, "aws cloudformation deploy")}},
		{name: "irsa", blocks: []string{block(t, install, "OIDCIssuer="), block(t, install, "helm upgrade")}, irsa: true},
		{name: "aws cli", blocks: []string{block(t, install, "aws iam create-role"), block(t, install, "aws eks create-access-entry")}},
		{name: "taking over from karpenter", blocks: []string{block(t, migrate, "PassNodeRole=")}, passed: "KarpenterNodeRole-" + installCluster},
	} {
		t.Run(v.name, func(t *testing.T) {
			endpoint := ""
			for attempt := 0; endpoint == "" && attempt < 3; attempt++ {
				endpoint = serveMoto(t, bin, installAccount)
			}
			if endpoint == "" {
				t.Fatal("moto_server did not start")
			}
			blocks := append(append(slices.Clone(common), v.blocks[0]), tail...)
			if v.irsa {
				blocks = append(blocks, v.blocks[1])
			} else if len(v.blocks) > 1 {
				blocks = append(blocks, v.blocks[1:]...)
			}
			run := runBlocks(t, endpoint, blocks)
			checkInstall(t, endpoint, run, v.irsa, v.passed)
		})
	}
}

// What the test's user sets in step 1, unlike the page's examples.
const (
	installCluster = "prod-eu-2"
	installRegion  = "eu-west-1"
	installVersion = "v9.8.7"
	installAccount = "210987654321"
)

// docBlocks are the fenced shell blocks of a page, in order (indented
// ones, inside lists, too).
func docBlocks(t *testing.T, page string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../..", page))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in, indent := false, ""
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case !in && trimmed == "```sh":
			in, indent, cur = true, line[:len(line)-len(trimmed)], nil
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	return blocks
}

// block is the first block holding marker.
func block(t *testing.T, blocks []string, marker string) string {
	t.Helper()
	for _, b := range blocks {
		if strings.Contains(b, marker) {
			return b
		}
	}
	t.Fatalf("no shell block holds %q", marker)
	return ""
}

// stubs stand in for what needs a registry, a cluster, or an API moto
// does not have (EKS access entries, pod identity and add-ons; AWS-managed
// IAM policies): each call is recorded, one file per call, its
// arguments NUL-separated; kubectl apply keeps its input beside.
const stubs = `
record() { f="$REC/$(date +%s%N)-$RANDOM"; printf '%s\0' "$@" > "$f"; echo "$f"; }
drain() { if [[ " $* " == *" --password-stdin "* ]]; then cat >/dev/null; fi; }
helm() { drain "$@"; record helm "$@" >/dev/null; }
make() { record make "$@" >/dev/null; }
go() { drain "$@"; record go "$@" >/dev/null; }
kubectl() { f=$(record kubectl "$@"); if [ "${1:-}" = apply ]; then cat > "$f.yaml"; fi; }
aws() {
  case "$1 ${2:-}" in
    "ecr get-login-password"|"ecr create-repository"|"eks create-addon"|"eks create-access-entry"|"eks create-pod-identity-association")
      record aws "$@" >/dev/null; echo password ;;
    "iam attach-role-policy")
      # moto does not hold every AWS-managed policy.
      if [[ "$*" == *":iam::aws:policy/"* ]]; then record aws "$@" >/dev/null; else command aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; fi ;;
    # (version 1 of the CLI does not read AWS_ENDPOINT_URL for SQS)
    *) command aws --endpoint-url "$AWS_ENDPOINT_URL" "$@" ;;
  esac
}
`

// installRun is what a run of the blocks left: the calls recorded, in
// order, and the objects kubectl applied.
type installRun struct {
	calls   [][]string
	applied []string
}

func (r installRun) call(tool string, args ...string) []string {
	for _, c := range r.calls {
		if c[0] == tool && len(c) > len(args) && slices.Equal(c[1:1+len(args)], args) {
			return c
		}
	}
	return nil
}

// argOf is the value of --name (or --name=value) in a recorded call.
func argOf(call []string, name string) string {
	for i, a := range call {
		if a == name && i+1 < len(call) {
			return call[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func runBlocks(t *testing.T, endpoint string, blocks []string) installRun {
	t.Helper()
	rec := t.TempDir()
	users := regexp.MustCompile(`(?m)^export (CLUSTER_NAME|AWS_REGION|NODEWRIGHT_VERSION)=.*$`)
	script := "set -euo pipefail\n" + stubs
	for _, b := range blocks {
		script += users.ReplaceAllStringFunc(b, func(line string) string {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			return "export " + name + "=" + map[string]string{"CLUSTER_NAME": installCluster, "AWS_REGION": installRegion, "NODEWRIGHT_VERSION": installVersion}[name]
		})
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "REC="+rec, "AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_DEFAULT_REGION="+installRegion, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=")
	// The IRSA block reads the cluster's OIDC issuer: the cluster exists.
	create := exec.Command("aws", "eks", "create-cluster", "--name", installCluster, "--role-arn", "arn:aws:iam::"+installAccount+":role/eks",
		"--resources-vpc-config", "subnetIds=subnet-0a1b2c3d")
	create.Env = cmd.Env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("creating the EKS cluster in moto: %v\n%s", err, out)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the page's commands failed: %v\n%s", err, out.String())
	}
	entries, err := os.ReadDir(rec)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var r installRun
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(rec, n))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(n, ".yaml") {
			r.applied = append(r.applied, string(data))
			continue
		}
		r.calls = append(r.calls, strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"))
	}
	return r
}

// rendered renders the chart as the recorded helm install (and upgrade)
// ask: the release, its namespace and every --set.
func (r installRun) rendered(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	install := r.call("helm", "install")
	if install == nil {
		t.Fatal("the page runs no helm install")
	}
	values := map[string]any{}
	for _, c := range [][]string{install, r.call("helm", "upgrade")} {
		for i, a := range c {
			if a == "--set" && i+1 < len(c) {
				if err := strvals.ParseInto(c[i+1], values); err != nil {
					t.Fatalf("helm --set %s: %v", c[i+1], err)
				}
			}
		}
	}
	// make chart VERSION=... packages the chart with that appVersion.
	appVersion := argOf(r.call("make", "image", "chart"), "VERSION")
	objs, err := charts.Render(charts.Release{Name: install[2], Namespace: argOf(install, "--namespace"), Values: values, AppVersion: appVersion})
	if err != nil {
		t.Fatalf("the chart does not render with the page's values: %v", err)
	}
	return objs
}

func checkInstall(t *testing.T, endpoint string, r installRun, irsa bool, passed string) {
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(installRegion), awsconfig.WithBaseEndpoint(endpoint),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")))
	if err != nil {
		t.Fatal(err)
	}
	iamAPI, sqsAPI := iam.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	objs := r.rendered(t)

	// The controller's settings name the cluster and a queue that exists.
	args := containerArgs(t, objs)
	if got := argValue(args, "--cluster-name"); got != installCluster {
		t.Errorf("the chart runs the controller with --cluster-name %q, want %q", got, installCluster)
	}
	queue := argValue(args, "--interruption-queue")
	if _, err := sqsAPI.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)}); err != nil {
		t.Errorf("the chart's --interruption-queue %q is no queue the commands made: %v", queue, err)
	}

	// The EC2NodeClass's role is a role the commands made, in an
	// instance profile of the same name.
	role := appliedNodeClassRole(t, r)
	if _, err := iamAPI.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		t.Errorf("the page's EC2NodeClass names role %q, which the commands did not make: %v", role, err)
	}
	if ip, err := iamAPI.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(role)}); err != nil || len(ip.InstanceProfile.Roles) != 1 || aws.ToString(ip.InstanceProfile.Roles[0].RoleName) != role {
		t.Errorf("no instance profile %s holding the node role: %v", role, err)
	}

	// The controller's role: its policy is docs/iam-policy.json for
	// these names, and it trusts the chart's service account.
	sa := findKind(t, objs, "ServiceAccount")
	controllerRole := installCluster + "-nodewright-controller"
	if passed == "" {
		passed = role
	}
	checkControllerPolicy(t, ctx, iamAPI, controllerRole, passed, queue)
	got, err := iamAPI.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(controllerRole)})
	if err != nil {
		t.Fatalf("no controller role %s: %v", controllerRole, err)
	}
	trust, _ := url.QueryUnescape(aws.ToString(got.Role.AssumeRolePolicyDocument))
	if irsa {
		subject := fmt.Sprintf("system:serviceaccount:%s:%s", sa.GetNamespace(), sa.GetName())
		if !strings.Contains(trust, `"`+subject+`"`) || !strings.Contains(trust, "sts:AssumeRoleWithWebIdentity") {
			t.Errorf("the controller role does not trust the chart's service account %s by IRSA: %s", subject, trust)
		}
		if ann := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]; ann != aws.ToString(got.Role.Arn) {
			t.Errorf("the chart's service account names role %q, the commands made %q", ann, aws.ToString(got.Role.Arn))
		}
	} else {
		if !strings.Contains(trust, "pods.eks.amazonaws.com") {
			t.Errorf("the controller role does not trust EKS Pod Identity: %s", trust)
		}
		checkPodIdentity(t, r, sa, aws.ToString(got.Role.Arn))
	}

	checkManagedPolicies(t, r)

	// The image and chart pushed are the ones installed.
	checkArtifacts(t, r, objs)
}

// checkControllerPolicy compares the controller role's inline policy
// with docs/iam-policy.json, its placeholders filled in.
func checkControllerPolicy(t *testing.T, ctx context.Context, iamAPI *iam.Client, role, nodeRole, queue string) {
	t.Helper()
	out, err := iamAPI.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String("nodewright-controller")})
	if err != nil {
		t.Fatalf("no policy nodewright-controller on role %s: %v", role, err)
	}
	doc, _ := url.QueryUnescape(aws.ToString(out.PolicyDocument))
	data, err := os.ReadFile("../../docs/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("${AWS_PARTITION}", "aws", "${AWS_REGION}", installRegion, "${AWS_ACCOUNT_ID}", installAccount,
		"${CLUSTER_NAME}", installCluster, "${NODE_ROLE_NAME}", nodeRole, "${INTERRUPTION_QUEUE}", queue).Replace(string(data))
	var gotDoc, wantDoc any
	if err := json.Unmarshal([]byte(doc), &gotDoc); err != nil {
		t.Fatalf("role %s's policy is not JSON: %v", role, err)
	}
	if err := json.Unmarshal([]byte(want), &wantDoc); err != nil {
		t.Fatal(err)
	}
	g, _ := json.MarshalIndent(gotDoc, "", " ")
	w, _ := json.MarshalIndent(wantDoc, "", " ")
	if !bytes.Equal(g, w) {
		t.Errorf("role %s's policy is not docs/iam-policy.json for node role %s and queue %s:\n got %s\nwant %s", role, nodeRole, queue, g, w)
	}
}

// checkPodIdentity: the page associates the controller role with the
// chart's service account, through the stack (its parameters' defaults)
// or the command.
func checkPodIdentity(t *testing.T, r installRun, sa *unstructured.Unstructured, roleARN string) {
	t.Helper()
	if c := r.call("aws", "eks", "create-pod-identity-association"); c != nil {
		if argOf(c, "--namespace") != sa.GetNamespace() || argOf(c, "--service-account") != sa.GetName() || argOf(c, "--role-arn") != roleARN || argOf(c, "--cluster-name") != installCluster {
			t.Errorf("the pod identity association %v is not for the chart's service account %s/%s and role %s", c, sa.GetNamespace(), sa.GetName(), roleARN)
		}
		return
	}
	data, err := os.ReadFile("../../docs/cloudformation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Parameters map[string]struct {
			Default string `yaml:"Default"`
		} `yaml:"Parameters"`
		Resources map[string]struct {
			Type string `yaml:"Type"`
		} `yaml:"Resources"`
	}
	var node yamlv3.Node
	if err := yamlv3.Unmarshal(data, &node); err != nil {
		t.Fatal(err)
	}
	if err := node.Decode(&tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.Resources["ControllerPodIdentity"].Type != "AWS::EKS::PodIdentityAssociation" {
		t.Error("the template associates the controller role with no service account")
	}
	if ns, name := tmpl.Parameters["Namespace"].Default, tmpl.Parameters["ServiceAccount"].Default; ns != sa.GetNamespace() || name != sa.GetName() {
		t.Errorf("the template associates %s/%s, the chart's service account is %s/%s", ns, name, sa.GetNamespace(), sa.GetName())
	}
}

// checkArtifacts: the page pushes the image to the repository the chart
// runs, with the tag the packaged chart's appVersion gives, and installs
// the chart it pushed.
func checkArtifacts(t *testing.T, r installRun, objs []*unstructured.Unstructured) {
	t.Helper()
	build := r.call("make", "image", "chart")
	if build == nil {
		t.Fatal("the page does not build the image and the chart")
	}
	version := argOf(build, "VERSION")
	var pushed string
	for _, c := range r.calls {
		if c[0] == "go" && slices.Contains(c, "push") {
			pushed = c[len(c)-1]
		}
	}
	image := containerImage(t, objs)
	if want := strings.TrimSuffix(image, ":"+installVersion); pushed != want+":"+version || version != installVersion {
		t.Errorf("the page pushes the image as %q (make VERSION=%s); the chart runs %q", pushed, version, image)
	}
	chartFile, err := os.ReadFile("../../charts/nodewright/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Name, Version string }
	if err := yaml.Unmarshal(chartFile, &meta); err != nil {
		t.Fatal(err)
	}
	// make chart VERSION=vX.Y.Z packages the chart as version X.Y.Z.
	meta.Version = strings.TrimPrefix(version, "v")
	push := r.call("helm", "push")
	install := r.call("helm", "install")
	if push == nil || push[2] != fmt.Sprintf("bin/chart/%s-%s.tgz", meta.Name, meta.Version) {
		t.Errorf("the page pushes %v; make chart writes bin/chart/%s-%s.tgz", push, meta.Name, meta.Version)
	} else if install[3] != push[3]+"/"+meta.Name || argOf(install, "--version") != meta.Version {
		t.Errorf("the page installs %s --version %s; it pushed %s to %s", install[3], argOf(install, "--version"), push[2], push[3])
	}
}

func appliedNodeClassRole(t *testing.T, r installRun) string {
	t.Helper()
	for _, doc := range r.applied {
		for _, part := range strings.Split(doc, "\n---\n") {
			var nc awsv1.EC2NodeClass
			if err := yaml.UnmarshalStrict([]byte(part), &nc); err != nil || nc.Kind != "EC2NodeClass" {
				continue
			}
			for _, term := range nc.Spec.SubnetSelectorTerms {
				if term.Tags["karpenter.sh/discovery"] != installCluster {
					t.Errorf("the page's EC2NodeClass selects subnets tagged %v, not the cluster's discovery tag", term.Tags)
				}
			}
			return nc.Spec.Role
		}
	}
	t.Fatal("the page applies no EC2NodeClass")
	return ""
}

func containerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	return controllerContainer(t, objs).Args
}

func containerImage(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	return controllerContainer(t, objs).Image
}

func controllerContainer(t *testing.T, objs []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	var pod struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(findKind(t, objs, "Deployment").Object, &pod); err != nil {
		t.Fatal(err)
	}
	return pod.Spec.Template.Spec.Containers[0]
}

// argValue is the value of --name=value among a container's args.
func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func findKind(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("the chart renders no %s", kind)
	return nil
}

// checkManagedPolicies: the node role gets the AWS-managed policies the
// template attaches, whichever way it is made.
func checkManagedPolicies(t *testing.T, r installRun) {
	t.Helper()
	var attached []string
	for _, c := range r.calls {
		if len(c) > 2 && c[0] == "aws" && c[1] == "iam" && c[2] == "attach-role-policy" {
			attached = append(attached, argOf(c, "--policy-arn"))
		}
	}
	if len(attached) == 0 {
		return // the stack attached them
	}
	data, err := os.ReadFile("../../docs/cloudformation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`arn:\$\{AWS::Partition\}:iam::aws:policy/([A-Za-z0-9_]+)`).FindAllStringSubmatch(string(data), -1) {
		want = append(want, "arn:aws:iam::aws:policy/"+m[1])
	}
	slices.Sort(attached)
	slices.Sort(want)
	if !slices.Equal(attached, want) {
		t.Errorf("the commands attach %v to the node role; the template attaches %v", attached, want)
	}
}
