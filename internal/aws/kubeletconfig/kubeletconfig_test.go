package kubeletconfig_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
)

func config(t *testing.T, doc string) awsv1.KubeletConfiguration {
	t.Helper()
	var k awsv1.KubeletConfiguration
	if err := yaml.Unmarshal([]byte(doc), &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// Any field of the kubelet's own configuration is accepted, nested ones
// too, with the values the kubelet takes.
func TestParseAcceptsTheKubeletsConfiguration(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":                       `{}`,
		"the fields nodewright reads": `{clusterDNS: [10.0.0.10], maxPods: 110, podsPerCore: 10, kubeReserved: {cpu: 200m, memory: 100Mi, ephemeral-storage: 1Gi, pid: "100"}, systemReserved: {memory: "0"}, evictionHard: {memory.available: 5%, nodefs.available: 12.5%, pid.available: "1000"}, evictionSoft: {memory.available: 500Mi}, evictionSoftGracePeriod: {memory.available: 1m30s}, evictionMaxPodGracePeriod: 30, imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80, cpuCFSQuota: false}`,
		"a field it does not read":    `{serializeImagePulls: false}`,
		"a nested subtree":            `{logging: {format: json, flushFrequency: 5s, options: {json: {infoBufferSize: 100Mi, splitStream: true}}}}`,
		"a threshold as a quantity":   `{evictionHard: {memory.available: 500Mi}}`,
		"zero values":                 `{maxPods: 0, podsPerCore: 0, evictionMaxPodGracePeriod: 0, imageGCHighThresholdPercent: 1, imageGCLowThresholdPercent: 0}`,
		"minimum reclaim":             `{evictionMinimumReclaim: {memory.available: 500Mi, nodefs.available: 5%}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := kubeletconfig.Parse(config(t, doc)); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
	c, err := kubeletconfig.Parse(config(t, `{maxPods: 42, kubeReserved: {cpu: 300m}, serializeImagePulls: false}`))
	if err != nil || c == nil || *c.MaxPods != 42 || c.KubeReserved["cpu"] != "300m" {
		t.Errorf("parsed %+v, %v", c, err)
	}
}

// What the kubelet would refuse is refused, each problem naming the
// field, the value and what to give instead; every problem is reported,
// not the first alone.
func TestParseRefusesWhatTheKubeletWould(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"a field the kubelet does not have":                   {`{notAKubeletField: true}`, `unknown field "notAKubeletField"`},
		"an unknown field nested in a subtree":                {`{logging: {format: json, notAField: 1}}`, `unknown field "logging.notAField"`},
		"a wrong type":                                        {`{podsPerCore: ten}`, "spec.kubelet.podsPerCore: a string where the kubelet takes a whole number"},
		"a nested wrong type":                                 {`{logging: {format: 5}}`, "spec.kubelet.logging.format: a number where the kubelet takes a string"},
		"clusterDNS as a string":                              {`{clusterDNS: 10.0.0.10}`, "spec.kubelet.clusterDNS: a string where the kubelet takes a list"},
		"registerWithTaints":                                  {`{registerWithTaints: [{key: a, effect: NoSchedule}]}`, "spec.kubelet.registerWithTaints: can't be set"},
		"negative maxPods":                                    {`{maxPods: -1}`, "spec.kubelet.maxPods: -1 is negative"},
		"negative podsPerCore":                                {`{podsPerCore: -1}`, "spec.kubelet.podsPerCore: -1 is negative"},
		"negative evictionMaxPodGracePeriod":                  {`{evictionMaxPodGracePeriod: -1}`, "spec.kubelet.evictionMaxPodGracePeriod: -1 is negative"},
		"image GC above 100":                                  {`{imageGCHighThresholdPercent: 101}`, "spec.kubelet.imageGCHighThresholdPercent: 101 is not a percentage from 0 to 100"},
		"image GC below 0":                                    {`{imageGCLowThresholdPercent: -1}`, "spec.kubelet.imageGCLowThresholdPercent: -1 is not a percentage"},
		"image GC thresholds inverted":                        {`{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 80}`, "imageGCHighThresholdPercent (50) must be greater than imageGCLowThresholdPercent (80)"},
		"image GC thresholds equal":                           {`{imageGCHighThresholdPercent: 80, imageGCLowThresholdPercent: 80}`, "must be greater than"},
		"soft eviction without grace period":                  {`{evictionSoft: {memory.available: 5%}}`, "spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod"},
		"grace period for another signal":                     {`{evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: 1m, nodefs.available: 1m}}`, "spec.kubelet.evictionSoftGracePeriod[nodefs.available]: has no threshold in evictionSoft"},
		"unknown eviction signal":                             {`{evictionHard: {memory.free: 100Mi}}`, "spec.kubelet.evictionHard[memory.free]: not an eviction signal"},
		"unknown reclaim signal":                              {`{evictionMinimumReclaim: {memory.free: 100Mi}}`, "spec.kubelet.evictionMinimumReclaim[memory.free]: not an eviction signal"},
		"threshold 5%3":                                       {`{evictionHard: {memory.available: 5%3}}`, `spec.kubelet.evictionHard[memory.available]: "5%3" must be a percentage from 0% to 100%`},
		"threshold 110%":                                      {`{evictionHard: {nodefs.available: 110%}}`, `spec.kubelet.evictionHard[nodefs.available]: "110%"`},
		"threshold 110GB":                                     {`{evictionSoft: {memory.available: 110GB}, evictionSoftGracePeriod: {memory.available: 1m}}`, `spec.kubelet.evictionSoft[memory.available]: "110GB"`},
		"negative threshold":                                  {`{evictionHard: {memory.available: -5Mi}}`, `"-5Mi" must be a percentage`},
		"negative kubeReserved":                               {`{kubeReserved: {cpu: -100m}}`, `spec.kubelet.kubeReserved[cpu]: "-100m" is not a quantity of 0 or more`},
		"systemReserved neither a quantity nor an expression": {`{systemReserved: {memory: lots}}`, `spec.kubelet.systemReserved[memory]: the expression "lots": ERROR: <input>:1:1: undeclared reference to 'lots'`},
		"kubeReserved of another resource":                    {`{kubeReserved: {gpu: "1"}}`, "spec.kubelet.kubeReserved[gpu]: not a resource the kubelet reserves"},
		"grace period not a duration":                         {`{evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: a minute}}`, "spec.kubelet.evictionSoftGracePeriod"},
		"negative grace period":                               {`{evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: -1m}}`, "spec.kubelet.evictionSoftGracePeriod[memory.available]: -1m0s is negative"},
		"clusterDNS not an IP":                                {`{clusterDNS: [kube-dns]}`, `spec.kubelet.clusterDNS[0]: "kube-dns" is not an IP address`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := kubeletconfig.Parse(config(t, tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	_, err := kubeletconfig.Parse(config(t, `{maxPods: -1, kubeReserved: {cpu: "-5"}, notAKubeletField: 1}`))
	for _, want := range []string{"maxPods", "kubeReserved[cpu]", "notAKubeletField"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("every problem is reported: %v lacks %s", err, want)
		}
	}
}

// AL2023 applies every field; AL2, Bottlerocket and Windows only those
// nodewright reads (Bottlerocket not podsPerCore) and one cluster DNS
// address; Custom user data applies nothing and refuses nothing.
func TestUnsupported(t *testing.T) {
	open := config(t, `{serializeImagePulls: false, maxPods: 20, containerLogMaxSize: 50Mi}`)
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyCustom} {
		if got := kubeletconfig.Unsupported(family, open); got != "" {
			t.Errorf("%s: %s", family, got)
		}
	}
	for _, family := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2022} {
		got := kubeletconfig.Unsupported(family, open)
		if !strings.Contains(got, "spec.kubelet has fields not applied by the "+family+" AMI family that would be silently dropped: containerLogMaxSize, serializeImagePulls") ||
			strings.Contains(got, "maxPods") {
			t.Errorf("%s: %q", family, got)
		}
	}
	perCore := config(t, `{podsPerCore: 4}`)
	if got := kubeletconfig.Unsupported(awsv1.AMIFamilyBottlerocket, perCore); !strings.Contains(got, ": podsPerCore") {
		t.Errorf("Bottlerocket podsPerCore: %q", got)
	}
	if got := kubeletconfig.Unsupported(awsv1.AMIFamilyAL2, perCore); got != "" {
		t.Errorf("AL2 podsPerCore: %q", got)
	}
	dns := config(t, `{clusterDNS: [10.0.0.10, 10.0.0.11]}`)
	if got := kubeletconfig.Unsupported(awsv1.AMIFamilyAL2, dns); got != "spec.kubelet.clusterDNS: the AL2 AMI family takes one address, but 2 were set" {
		t.Errorf("AL2 two DNS addresses: %q", got)
	}
	if got := kubeletconfig.Unsupported(awsv1.AMIFamilyAL2023, dns); got != "" {
		t.Errorf("AL2023 two DNS addresses: %q", got)
	}
}

// CEL expressions over the instance type: maxPods first (max_pods is the
// type's default there), then the reservations with max_pods the pods
// resolved; cpu rounds up to 10m, memory up to 16Mi, ephemeral-storage is
// in Gi, other resources whole numbers.
func TestExpressions(t *testing.T) {
	c, err := kubeletconfig.Parse(config(t, `{maxPods: "((default_enis - 1) * (ips_per_eni - 1)) + 2", kubeReserved: {cpu: "max(60, vcpus * 33)", memory: "11 * max_pods + 255", ephemeral-storage: "1 + 2"}, systemReserved: {pid: "1000", memory: 100Mi}}`))
	if err != nil {
		t.Fatal(err)
	}
	m5large := kubeletconfig.Vars{InstanceType: "m5.large", VCPUs: 2, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 29}
	got, err := c.For(m5large)
	if err != nil {
		t.Fatal(err)
	}
	// maxPods: 2*9+2 = 20; cpu max(60, 66) = 66 → 70m; memory 11*20+255 = 475 → 480Mi.
	if *got.MaxPods != 20 || got.KubeReserved["cpu"] != "70m" || got.KubeReserved["memory"] != "480Mi" || got.KubeReserved["ephemeral-storage"] != "3Gi" ||
		got.SystemReserved["memory"] != "100Mi" || got.SystemReserved["pid"] != "1000" || got.HasExpressions() {
		t.Errorf("m5.large: maxPods %d kubeReserved %v systemReserved %v", *got.MaxPods, got.KubeReserved, got.SystemReserved)
	}
	big, err := c.For(kubeletconfig.Vars{InstanceType: "m5.4xlarge", VCPUs: 16, MemoryMiB: 65536, DefaultENIs: 8, IPsPerENI: 30, MaxPods: 234})
	// maxPods 7*29+2 = 205; cpu 16*33 = 528 → 530m; memory 11*205+255 = 2510 → 2512Mi.
	if err != nil || big.KubeReserved["cpu"] != "530m" || *big.MaxPods != 205 || big.KubeReserved["memory"] != "2512Mi" {
		t.Errorf("m5.4xlarge: %+v %v", big, err)
	}
	// A double is truncated; a literal maxPods stays what reservations read.
	lit, err := kubeletconfig.Parse(config(t, `{maxPods: 10, kubeReserved: {memory: "max_pods * 1.5"}}`))
	if err == nil {
		t.Fatalf("int times double type-checks: %+v", lit)
	}
	lit, err = kubeletconfig.Parse(config(t, `{maxPods: 10, kubeReserved: {memory: "double(max_pods) * 1.55"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lit.For(m5large); err != nil || got.KubeReserved["memory"] != "16Mi" || *got.MaxPods != 10 {
		t.Errorf("literal maxPods 10, memory 15.5 → %+v %v; want 16Mi", got, err)
	}

	for name, tc := range map[string]struct{ doc, want string }{
		"does not compile": {`{maxPods: "vcpus *"}`, `spec.kubelet.maxPods: the expression "vcpus *"`},
		"unknown variable": {`{kubeReserved: {cpu: "cores * 10"}}`, `spec.kubelet.kubeReserved[cpu]: the expression "cores * 10"`},
		"gives a string":   {`{maxPods: "instance_type"}`, "it must give a number"},
		"a quantity stays": {`{kubeReserved: {cpu: "-1"}}`, `"-1" is not a quantity of 0 or more`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := kubeletconfig.Parse(config(t, tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	neg, err := kubeletconfig.Parse(config(t, `{maxPods: "vcpus - 4", systemReserved: {cpu: "vcpus - 8"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := neg.For(m5large); err == nil || !strings.Contains(err.Error(), `spec.kubelet.maxPods "vcpus - 4" for m5.large gives -2 pods`) {
		t.Errorf("negative maxPods: %v", err)
	}
	if _, err := neg.For(kubeletconfig.Vars{InstanceType: "m5.2xlarge", VCPUs: 8}); err != nil {
		t.Errorf("8 vCPUs: %v", err)
	}
	if _, err := neg.For(kubeletconfig.Vars{InstanceType: "m5.xlarge", VCPUs: 6}); err == nil || !strings.Contains(err.Error(), "a negative reservation") {
		t.Errorf("negative reservation: %v", err)
	}
}
