package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// An AWS account as moto (an AWS implementation nobody here wrote) plays
// it, seeded as an EKS cluster's account is.
type motoAccount struct {
	Endpoint string
	EC2      *ec2.Client
	IAM      *iam.Client
	// Foreign are instances nodewright did not launch, by what they are.
	Foreign map[string]string
	seeding motoSeed
}

// motoSeed is what the account is set up with.
type motoSeed struct {
	Cluster, NodeRole string
	// AccountID is moto's account (MOTO_ACCOUNT_ID); 123456789012 when empty.
	AccountID string
	// AliasRoot, when set, holds a copy of the EKS-optimized AMI
	// parameters of the al2023 alias (moto refuses parameters under
	// /aws/service).
	AliasRoot string
}

const (
	motoCluster  = "moto-e2e"
	motoNodeRole = "KarpenterNodeRole-moto-e2e"
	motoRegion   = "us-east-1"
	// AMIs moto ships (Amazon Linux 2022, x86_64 and arm64), named by SSM
	// parameters as a user without the EKS aliases would.
	motoAMIx86   = "ami-076f415166b04f5fe"
	motoAMIarm64 = "ami-0e9271c829888680e"
)

// motoEnv is the environment that points the AWS SDK at moto.
func motoEnv(endpoint string) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + endpoint, "AWS_REGION=" + motoRegion, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}

// startMoto starts moto_server on a free loopback port for the test and
// seeds it: the EKS cluster, the default VPC's subnets in three zones and
// its default security group tagged for discovery, the node role, SSM parameters naming the AMIs, and
// instances nodewright did not launch (a managed node group's, another
// cluster's, an untagged one).
func startMoto(t *testing.T, seed motoSeed) *motoAccount {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server is not on PATH: install it with pip install 'moto[server]' (.ci/run does)")
	}
	// A free port may be taken between finding it and moto binding it:
	// moto then exits, and another port is tried.
	var endpoint string
	for attempt := 0; endpoint == "" && attempt < 3; attempt++ {
		endpoint = serveMoto(t, bin, seed.AccountID)
	}
	if endpoint == "" {
		t.Fatal("moto_server did not start")
	}
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(motoRegion), awsconfig.WithBaseEndpoint(endpoint),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")))
	if err != nil {
		t.Fatal(err)
	}
	m := &motoAccount{Endpoint: endpoint, EC2: ec2.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg), seeding: seed}
	m.seed(t, ctx, eks.NewFromConfig(cfg), ssm.NewFromConfig(cfg))
	return m
}

// serveMoto starts moto_server on a free loopback port until the test
// ends and returns its endpoint once it answers; empty when it exited
// first.
func serveMoto(t *testing.T, bin, accountID string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if accountID != "" {
		cmd.Env = append(os.Environ(), "MOTO_ACCOUNT_ID="+accountID)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			log := out.String()
			t.Logf("moto_server on port %d (the end):\n%s", port, log[max(0, len(log)-3000):])
		}
	})
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("moto_server exited")
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/moto-api/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		_ = resp.Body.Close()
		return true, nil
	})
	if err != nil {
		t.Logf("moto_server on port %d: %v", port, err)
		return ""
	}
	return endpoint
}

func (m *motoAccount) seed(t *testing.T, ctx context.Context, eksAPI *eks.Client, ssmAPI *ssm.Client) {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seeding moto: %v", err)
		}
	}
	seed := m.seeding
	discovery := []ec2types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String(seed.Cluster)}}
	// The account's default VPC, its subnets in three zones and its default
	// security group, tagged for discovery. moto gives an instance it
	// launches for a fleet's spot capacity the security group named
	// "default", whatever the launch template says (EC2 gives it the
	// template's); with the class selecting that group, such a node is not
	// reported as drifted from its security groups for moto's sake.
	vpcs, err := m.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	must(vpcs, err)
	if len(vpcs.Vpcs) != 1 {
		t.Fatalf("moto has %d default VPCs", len(vpcs.Vpcs))
	}
	vpcID := vpcs.Vpcs[0].VpcId
	var subnets, tagged []string
	for _, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		out, err := m.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
			{Name: aws.String("vpc-id"), Values: []string{aws.ToString(vpcID)}}, {Name: aws.String("availability-zone"), Values: []string{zone}}}})
		must(out, err)
		if len(out.Subnets) == 0 {
			t.Fatalf("moto's default VPC has no subnet in %s", zone)
		}
		subnets = append(subnets, aws.ToString(out.Subnets[0].SubnetId))
	}
	groups, err := m.EC2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{aws.ToString(vpcID)}}, {Name: aws.String("group-name"), Values: []string{"default"}}}})
	must(groups, err)
	if len(groups.SecurityGroups) != 1 {
		t.Fatalf("moto's default VPC has %d default security groups", len(groups.SecurityGroups))
	}
	tagged = append(tagged, subnets...)
	tagged = append(tagged, aws.ToString(groups.SecurityGroups[0].GroupId))
	must(m.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: tagged, Tags: discovery}))
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	must(m.IAM.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(seed.NodeRole), AssumeRolePolicyDocument: aws.String(trust)}))
	must(eksAPI.CreateCluster(ctx, &eks.CreateClusterInput{Name: aws.String(seed.Cluster), Version: aws.String("1.34"),
		RoleArn:            aws.String("arn:aws:iam::123456789012:role/eks-cluster"),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: subnets}}))
	for arch, ami := range map[string]string{"x86_64": motoAMIx86, "arm64": motoAMIarm64} {
		must(ssmAPI.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/nodewright-e2e/al2023/" + arch), Value: aws.String(ami), Type: ssmtypes.ParameterTypeString}))
		if seed.AliasRoot != "" {
			params, err := nodeclass.AliasParameters(seed.AliasRoot, "al2023@latest", "1.34")
			must(params, err)
			for _, p := range params {
				if strings.Contains(p, "/"+arch+"/") {
					must(ssmAPI.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(p), Value: aws.String(ami), Type: ssmtypes.ParameterTypeString}))
				}
			}
		}
	}
	// Instances nodewright did not launch.
	cluster := "kubernetes.io/cluster/" + seed.Cluster
	m.Foreign = map[string]string{}
	for what, tags := range map[string]map[string]string{
		"a managed node group's": {cluster: "owned", "eks:nodegroup-name": "system", "eks:cluster-name": seed.Cluster},
		"another cluster's":      {"kubernetes.io/cluster/other": "owned", v1.LabelNodePool: "default", "karpenter.sh/nodeclaim": "default-abcde", awsv1.LabelEC2NodeClass: "default"},
		"untagged":               nil,
	} {
		in := &ec2.RunInstancesInput{ImageId: aws.String(motoAMIx86), InstanceType: ec2types.InstanceTypeM5Large, MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(subnets[0])}
		if len(tags) > 0 {
			spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeInstance}
			for k, v := range tags {
				spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
			}
			in.TagSpecifications = []ec2types.TagSpecification{spec}
		}
		out, err := m.EC2.RunInstances(ctx, in)
		must(out, err)
		m.Foreign[aws.ToString(out.Instances[0].InstanceId)] = what
	}
}

// instances are the account's instances by id, with their state and tags.
func (m *motoAccount) instances(t *testing.T, filters ...ec2types.Filter) map[string]ec2types.Instance {
	t.Helper()
	out := map[string]ec2types.Instance{}
	pages := ec2.NewDescribeInstancesPaginator(m.EC2, &ec2.DescribeInstancesInput{Filters: filters})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				out[aws.ToString(inst.InstanceId)] = inst
			}
		}
	}
	return out
}

// foreignUntouched fails the test when an instance nodewright did not
// launch is not running.
func (m *motoAccount) foreignUntouched(t *testing.T) {
	t.Helper()
	all := m.instances(t)
	for id, what := range m.Foreign {
		if st := all[id].State; st == nil || st.Name != ec2types.InstanceStateNameRunning {
			t.Errorf("instance %s (%s) was touched: %+v", id, what, st)
		}
	}
}

func tagMap(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// startController runs `nodewright controller --cloud aws` in its own
// process against moto, as the chart's service account; its log goes to
// the test's log when the test fails.
func startController(t *testing.T, cp *controlplane.ControlPlane, kube client.Client, endpoint string, extra ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := charts.InstallRBAC(ctx, kube, cp.Config, motoCluster); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := charts.WriteKubeconfig(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"controller", "--cloud", "aws", "--cluster-name", motoCluster, "--cluster-endpoint", cp.Config.Host,
		"--leader-elect=false", "--metrics-addr", "0", "--health-addr", "0", "--batch-idle", "300ms", "--batch-max", "3s"}, extra...)
	cmd := exec.Command(harness.BuildNodewright(t), args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), motoEnv(endpoint)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("controller log (last 8000 bytes):\n%s", data[max(0, len(data)-8000):])
		}
	})
}

// motoWait polls a condition for up to limit, failing the test with what
// it waited for.
func motoWait(t *testing.T, limit time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, limit, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// nodewright against moto, as a user would run it on a new account: the
// controller in its own process with --cloud aws and the AWS SDK's own
// clients resolves the EC2NodeClass (subnets, security groups, AMIs from
// SSM parameters, an instance profile it makes for the role), launches
// the pending pods' NodeClaims with launch templates and CreateFleet —
// without the Pricing API, which moto lacks, by the built-in prices; three
// identical NodeClaims as one launch batch — and tags the instances as its
// own, the batch's with their NodeClaims after the launch (garbage
// collection's CreateTags); garbage collection terminates an
// instance whose NodeClaim vanished and leaves alone the instances it did
// not launch (a managed node group's, another cluster's, an untagged
// one); deleting the NodePool and EC2NodeClass leaves no instance, launch
// template or instance profile of nodewright's behind.
func TestAgainstMoto(t *testing.T) {
	m := startMoto(t, motoSeed{Cluster: motoCluster, NodeRole: motoNodeRole})
	cp := controlplane.StartForTest(t, controlplane.Options{Scheduler: true, ControllerManager: true})
	scheme, err := operator.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	startController(t, cp, kube, m.Endpoint)
	ctx := context.Background()
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		AMIFamily: ptr.To(awsv1.AMIFamilyAL2023), Role: motoNodeRole,
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{SSMParameter: "/nodewright-e2e/al2023/x86_64"}, {SSMParameter: "/nodewright-e2e/al2023/arm64"}},
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": motoCluster}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": motoCluster}}},
	}}
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
	}
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
		// One pod per node: three identical NodeClaims, launched as one
		// launch batch, whose instances garbage collection then tags.
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: corev1.LabelHostname}}}}}},
	}}
	// The pods wait before the NodePool exists, so that one decision
	// plans all three.
	if err := kube.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	motoWait(t, 2*time.Minute, "the Deployment's three pods", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		err := kube.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels(labels))
		return err == nil && len(pods.Items) == 3, err
	})
	for _, obj := range []client.Object{class, pool} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	motoWait(t, 2*time.Minute, "EC2NodeClass default Ready", func(ctx context.Context) (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(class), class)
		return err == nil && meta.IsStatusConditionTrue(class.Status.Conditions, awsv1.ConditionReady), err
	})
	if len(class.Status.AMIs) != 2 || len(class.Status.Subnets) != 3 || len(class.Status.SecurityGroups) != 1 || class.Status.InstanceProfile != nodeclass.ProfileName(motoCluster, motoRegion, "default") {
		t.Errorf("EC2NodeClass status: AMIs %+v, subnets %+v, security groups %+v, instance profile %q", class.Status.AMIs, class.Status.Subnets, class.Status.SecurityGroups, class.Status.InstanceProfile)
	}
	motoWait(t, time.Minute, "PricesCurrent=False (moto has no Pricing API)", func(ctx context.Context) (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(class), class)
		c := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionPricesCurrent)
		return err == nil && c != nil && c.Status == metav1.ConditionFalse && c.Reason == awsv1.ReasonBuiltInPrices, err
	})

	// The pods' NodeClaims launch, priced by the built-in table.
	var launched []v1.NodeClaim
	motoWait(t, 2*time.Minute, "NodeClaims launched for the pods", func(ctx context.Context) (bool, error) {
		claims := &v1.NodeClaimList{}
		if err := kube.List(ctx, claims); err != nil {
			return false, err
		}
		launched = nil
		for _, nc := range claims.Items {
			if meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionLaunched) {
				launched = append(launched, nc)
			}
		}
		return len(launched) > 0 && len(launched) == len(claims.Items), nil
	})
	// The three NodeClaims launched as one launch batch; garbage
	// collection tags each instance with its NodeClaim after the launch.
	batches := map[string]int{}
	for _, nc := range launched {
		batches[nc.Annotations[cloudprovider.AnnotationLaunchBatch]]++
	}
	if len(launched) != 3 || len(batches) != 1 || batches[""] != 0 {
		t.Errorf("%d NodeClaims launched in launch batches %v, want 3 in one", len(launched), batches)
	}
	ours := m.taggedWithTheirNodeClaims(t, motoCluster, launched)
	for _, nc := range launched {
		_, id, _ := strings.Cut(strings.TrimPrefix(nc.Status.ProviderID, "aws:///"), "/")
		inst, ok := ours[id]
		if !ok {
			t.Errorf("NodeClaim %s: instance %s is not tagged as nodewright's", nc.Name, id)
			continue
		}
		tags := tagMap(inst.Tags)
		want := map[string]string{"kubernetes.io/cluster/" + motoCluster: "owned", v1.LabelNodePool: "default", "karpenter.sh/nodeclaim": nc.Name,
			awsv1.LabelEC2NodeClass: "default", "eks:eks-cluster-name": motoCluster, "Name": "default/" + nc.Name}
		for k, v := range want {
			if tags[k] != v {
				t.Errorf("instance %s of NodeClaim %s: tag %s=%q, want %q", id, nc.Name, k, tags[k], v)
			}
		}
		if it := nc.Labels[corev1.LabelInstanceTypeStable]; string(inst.InstanceType) != it || it == "" {
			t.Errorf("NodeClaim %s is labelled %q, its instance is %s", nc.Name, it, inst.InstanceType)
		}
	}
	// Node repair's reboot, through the SDK against moto: nodewright's own
	// instance reboots; the instances it did not launch are refused.
	rebooter := provider.New(m.EC2, nil, userdata.Cluster{Name: motoCluster}, clock.RealClock{})
	if err := rebooter.Reboot(ctx, launched[0].Status.ProviderID); err != nil {
		t.Errorf("rebooting nodewright's instance of NodeClaim %s: %v", launched[0].Name, err)
	}
	for id, what := range m.Foreign {
		if err := rebooter.Reboot(ctx, "aws:///us-east-1a/"+id); !cloudprovider.IsNotOwned(err) {
			t.Errorf("rebooting instance %s (%s): %v, want refused as not nodewright's", id, what, err)
		}
	}
	lts, err := m.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.LabelEC2NodeClass), Values: []string{"default"}}}})
	if err != nil || len(lts.LaunchTemplates) == 0 {
		t.Errorf("no launch template of EC2NodeClass default: %v", err)
	}

	// An instance whose NodeClaim vanished (its finalizer never ran) is
	// collected; the instances nodewright did not launch, older, listed
	// before it, are not.
	orphan := launched[0]
	before := orphan.DeepCopy()
	orphan.Finalizers = nil
	if err := kube.Patch(ctx, &orphan, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, &orphan); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	_, orphanID, _ := strings.Cut(strings.TrimPrefix(orphan.Status.ProviderID, "aws:///"), "/")
	motoWait(t, 3*time.Minute, "garbage collection to terminate the orphaned instance "+orphanID, func(context.Context) (bool, error) {
		st := m.instances(t)[orphanID].State
		return st != nil && (st.Name == ec2types.InstanceStateNameTerminated || st.Name == ec2types.InstanceStateNameShuttingDown), nil
	})
	m.foreignUntouched(t)

	// Deleting the NodePool and EC2NodeClass leaves nothing of nodewright's.
	for _, obj := range []client.Object{deploy, pool, class} {
		if err := kube.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	motoWait(t, 3*time.Minute, "the EC2NodeClass to go", func(ctx context.Context) (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(class), &awsv1.EC2NodeClass{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	for id, inst := range m.instances(t, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodeclaim"}}) {
		if _, foreign := m.Foreign[id]; !foreign && inst.State.Name != ec2types.InstanceStateNameTerminated && inst.State.Name != ec2types.InstanceStateNameShuttingDown {
			t.Errorf("instance %s of nodewright's is left %s", id, inst.State.Name)
		}
	}
	if lts, err := m.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{}); err != nil || len(lts.LaunchTemplates) != 0 {
		t.Errorf("launch templates left: %+v %v", lts, err)
	}
	if _, err := m.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(nodeclass.ProfileName(motoCluster, motoRegion, "default"))}); err == nil {
		t.Errorf("instance profile %s is left", nodeclass.ProfileName(motoCluster, motoRegion, "default"))
	}
	m.foreignUntouched(t)
}

// nodewright sim against moto instead of its own simulated account: the
// simulated kubelets join moto's instances, reading the user data
// nodewright launched them with there, so the healthy scenario runs to
// the end (every pod Running on a Ready node, one instance per node: moto's
// launches completed as EC2 would, nothing drifts), and deleting the
// NodePools terminates every instance nodewright launched in moto and none
// other.
func TestSimAgainstMoto(t *testing.T) {
	m := startMoto(t, motoSeed{Cluster: account.ClusterName, NodeRole: account.NodeRole, AccountID: account.AccountID, AliasRoot: "/moto/aws/service"})
	sim, snap := harness.Run(t, "healthy", againstMoto(t, m, nil))
	if !snap.Done() {
		t.Fatalf("the healthy scenario against moto did not finish: %v", snap.Problems)
	}
	ctx := context.Background()
	m.foreignUntouched(t)
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	batched := 0
	for _, nc := range claims.Items {
		if _, ok := nc.Annotations[cloudprovider.AnnotationLaunchBatch]; ok {
			batched++
		}
	}
	t.Logf("%d of %d NodeClaims launched in launch batches", batched, len(claims.Items))
	for _, nc := range claims.Items {
		for _, c := range nc.Status.Conditions {
			if c.Type == v1.ConditionDrifted && c.Status == metav1.ConditionTrue {
				t.Errorf("NodeClaim %s drifted in moto: %s: %s", nc.Name, c.Reason, c.Message)
			}
		}
	}
	m.taggedWithTheirNodeClaims(t, account.ClusterName, claims.Items)
	ours := m.instances(t, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodeclaim"}},
		ec2types.Filter{Name: aws.String("tag:kubernetes.io/cluster/" + account.ClusterName), Values: []string{"owned"}},
		ec2types.Filter{Name: aws.String("instance-state-name"), Values: []string{"running"}})
	if len(ours) != snap.Nodes {
		t.Errorf("%d of nodewright's instances run in moto for %d nodes", len(ours), snap.Nodes)
		claims := &v1.NodeClaimList{}
		_ = sim.Kube.List(ctx, claims)
		for _, nc := range claims.Items {
			t.Logf("NodeClaim %s %s node %q conditions %+v", nc.Name, nc.Status.ProviderID, nc.Status.NodeName, nc.Status.Conditions)
		}
		for id, inst := range ours {
			t.Logf("instance %s launched %s tags %v", id, aws.ToTime(inst.LaunchTime), tagMap(inst.Tags))
		}
	}
	pools := &v1.NodePoolList{}
	if err := sim.Kube.List(ctx, pools); err != nil {
		t.Fatal(err)
	}
	for i := range pools.Items {
		if err := sim.Kube.Delete(ctx, &pools.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	motoWait(t, 3*time.Minute, "every NodeClaim gone", func(ctx context.Context) (bool, error) {
		claims := &v1.NodeClaimList{}
		err := sim.Kube.List(ctx, claims)
		return err == nil && len(claims.Items) == 0, err
	})
	for id, inst := range m.instances(t, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodeclaim"}}) {
		if _, foreign := m.Foreign[id]; !foreign && inst.State.Name != ec2types.InstanceStateNameTerminated && inst.State.Name != ec2types.InstanceStateNameShuttingDown {
			t.Errorf("instance %s of nodewright's is left %s", id, inst.State.Name)
		}
	}
	m.foreignUntouched(t)
}

// S1 at runtime against moto: the simulated kubelet reads the user data
// nodewright launched the instance with from moto, registers with the
// taints it says (Cilium's instead of karpenter.sh/unregistered), and the
// NodeClaim says so.
//
// One of the longer runs against moto: `make e2e-moto` runs it
// (NODEWRIGHT_E2E_MOTO=all); `make test` runs the others.
func TestS1AtRuntimeAgainstMoto(t *testing.T) {
	if os.Getenv("NODEWRIGHT_E2E_MOTO") != "all" {
		t.Skip("make e2e-moto runs it (NODEWRIGHT_E2E_MOTO=all)")
	}
	m := startMoto(t, motoSeed{Cluster: account.ClusterName, NodeRole: account.NodeRole, AccountID: account.AccountID, AliasRoot: "/moto/aws/service"})
	_, snap := harness.Run(t, "s1", againstMoto(t, m, func(o *runner.Options) { o.Operator.SkipUserDataValidation = true }))
	if !harness.ProblemsMention(snap, "Registered=True UnregisteredTaintMissing", "registered with node.cilium.io/agent-not-ready=true:NoExecute") {
		t.Errorf("the NodeClaims do not say the node registered without karpenter.sh/unregistered: %v", snap.Problems)
	}
	m.foreignUntouched(t)
}

// taggedWithTheirNodeClaims waits until the instance of each NodeClaim
// carries its name (karpenter.sh/nodeclaim), and returns the cluster's
// instances by ID.
func (m *motoAccount) taggedWithTheirNodeClaims(t *testing.T, cluster string, claims []v1.NodeClaim) map[string]ec2types.Instance {
	t.Helper()
	var ours map[string]ec2types.Instance
	var untagged []string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		ours = m.instances(t, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodeclaim"}},
			ec2types.Filter{Name: aws.String("tag:kubernetes.io/cluster/" + cluster), Values: []string{"owned"}})
		untagged = nil
		for _, nc := range claims {
			_, id, _ := strings.Cut(strings.TrimPrefix(nc.Status.ProviderID, "aws:///"), "/")
			if tagMap(ours[id].Tags)["karpenter.sh/nodeclaim"] != nc.Name {
				untagged = append(untagged, nc.Name+"@"+id)
			}
		}
		return len(untagged) == 0, nil
	})
	if err != nil {
		t.Fatalf("waiting for each NodeClaim's instance to be tagged with its name: %v; not tagged: %v", err, untagged)
	}
	return ours
}

// againstMoto edits a simulation's options to run against moto, set up
// as the simulated account's cluster, with the controllers in their own
// process.
func againstMoto(t *testing.T, m *motoAccount, edit func(*runner.Options)) func(*runner.Options) {
	t.Helper()
	bin := harness.BuildNodewright(t)
	return func(o *runner.Options) {
		o.ControllerProcess, o.AWSEndpoint = bin, m.Endpoint
		o.Operator.AMIAliasParameterRoot = m.seeding.AliasRoot
		if edit != nil {
			edit(o)
		}
	}
}
