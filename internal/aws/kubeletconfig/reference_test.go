package kubeletconfig_test

import (
	"errors"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
)

// The reference's own kubelet configuration cases (v1.15.1,
// pkg/apis/v1/kubeletconfiguration_validation_test.go), restated as
// facts: a spec.kubelet and whether the reference's controller accepts it
// (ValidationSucceeded) or refuses it. nodewright decides each the same.
func TestReferenceKubeletConfigurationCases(t *testing.T) {
	const file = "aws/kubeletconfiguration_validation: ValidateKubeletConfig > "
	type kcase struct {
		name, doc string
		accept    bool
		mentions  string // a fragment the refusal must hold
	}
	accept := func(name, doc string) kcase { return kcase{name: name, doc: doc, accept: true} }
	reject := func(name, doc string) kcase { return kcase{name: name, doc: doc} }
	cases := []kcase{
		accept("should accept > an empty configuration", `{}`),
		accept("should accept > a nil configuration", `null`),
		accept("should accept > the fields Karpenter reads for scheduling", `{maxPods: 110, podsPerCore: 10, kubeReserved: {cpu: 200m, memory: 100Mi}, systemReserved: {ephemeral-storage: 1Gi, pid: "1000"}, evictionHard: {memory.available: 5%}}`),
		accept("should accept > a field only the kubelet library knows about", `{serializeImagePulls: false}`),
		accept("should accept > a nested subtree", `{logging: {format: json, flushFrequency: 5s, options: {json: {infoBufferSize: 100Mi, splitStream: true}}}}`),
		accept("should accept > an eviction threshold as a quantity rather than a percentage", `{evictionHard: {nodefs.available: 500Mi}}`),
		accept("should accept > matching evictionSoft and evictionSoftGracePeriod", `{evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: 1m}}`),
		accept("should accept > imageGC thresholds in the correct order", `{imageGCHighThresholdPercent: 80, imageGCLowThresholdPercent: 60}`),
		accept("should accept > zero-valued fields", `{maxPods: 0, podsPerCore: 0, evictionMaxPodGracePeriod: 0}`),
		accept("should accept a CEL expression for > maxPods", `{maxPods: "vcpus * 10"}`),
		// The reference checks an expression only when it evaluates it for
		// an instance type; these two do not compile in its environment
		// either (no variable memory; "10m" is not CEL). nodewright
		// compiles expressions when it validates, so the class is refused
		// before any launch (reason KubeletExpressionInvalid).
		{name: "should accept a CEL expression for > kubeReserved (refused earlier here: it does not compile)", doc: `{kubeReserved: {memory: "memory * 0.1"}}`, mentions: "undeclared reference to 'memory'"},
		{name: "should accept a CEL expression for > systemReserved (refused earlier here: it does not compile)", doc: `{systemReserved: {cpu: "vcpus * 10m"}}`, mentions: "Syntax error"},
		accept("should accept a CEL expression for > kubeReserved, written as it compiles", `{kubeReserved: {memory: "memory_mib / 10"}}`),
		accept("should accept a CEL expression for > systemReserved, written as it compiles", `{systemReserved: {cpu: "vcpus * 10"}}`),
		accept("should accept a CEL expression for > maxPods alongside other fields", `{maxPods: "vcpus * 10", podsPerCore: 10}`),
		reject("should reject > a field the kubelet library doesn't declare", `{notAKubeletField: true}`),
		reject("should reject > an unknown field nested in a subtree", `{logging: {bogusLoggingField: true}}`),
		reject("should reject > an unknown field nested three levels deep", `{logging: {options: {json: {nope: x}}}}`),
		reject("should reject > a field with the wrong type", `{podsPerCore: ten}`),
		reject("should reject > a nested field with the wrong type", `{logging: {format: 12345}}`),
		reject("should reject > arbitrary junk", `{a: {b: [1, two, true]}}`),
		reject("should reject a negative > maxPods", `{maxPods: -1}`),
		reject("should reject a negative > podsPerCore", `{podsPerCore: -1}`),
		reject("should reject a negative > evictionMaxPodGracePeriod", `{evictionMaxPodGracePeriod: -1}`),
		reject("should reject an out-of-range percentage for > imageGCHighThresholdPercent above 100", `{imageGCHighThresholdPercent: 101}`),
		reject("should reject an out-of-range percentage for > imageGCHighThresholdPercent below 0", `{imageGCHighThresholdPercent: -1}`),
		reject("should reject an out-of-range percentage for > imageGCLowThresholdPercent above 100", `{imageGCLowThresholdPercent: 101}`),
		reject("should reject an out-of-range percentage for > imageGCLowThresholdPercent below 0", `{imageGCLowThresholdPercent: -1}`),
		reject("should reject an unreservable resource in > kubeReserved", `{kubeReserved: {gpu: "1"}}`),
		reject("should reject an unreservable resource in > systemReserved", `{systemReserved: {gpu: "1"}}`),
		reject("should reject a negative reservation in > kubeReserved", `{kubeReserved: {cpu: "-1"}}`),
		reject("should reject a negative reservation in > systemReserved", `{systemReserved: {cpu: "-1"}}`),
		reject("should reject an invalid eviction signal in > evictionHard", `{evictionHard: {notASignal: 5%}}`),
		reject("should reject an invalid eviction signal in > evictionSoft", `{evictionSoft: {notASignal: 5%}}`),
		reject("should reject an invalid eviction signal in > evictionMinimumReclaim", `{evictionMinimumReclaim: {notASignal: 500Mi}}`),
		reject("should reject an invalid eviction signal in > evictionSoftGracePeriod", `{evictionSoftGracePeriod: {notASignal: 1m}}`),
		reject("should reject an eviction threshold that is neither a percentage nor a quantity in > evictionHard", `{evictionHard: {memory.available: lots}}`),
		reject("should reject an eviction threshold that is neither a percentage nor a quantity in > evictionSoft", `{evictionSoft: {memory.available: lots}}`),
		reject("should reject an eviction threshold that is neither a percentage nor a quantity in > evictionMinimumReclaim", `{evictionMinimumReclaim: {memory.available: lots}}`),
		reject("should reject an evictionSoftGracePeriod that isn't a duration", `{evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: soon}}`),
		reject("should reject a negative evictionSoftGracePeriod", `{evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: -1m}}`),
		reject("should reject an evictionSoft threshold with no matching grace period", `{evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {nodefs.available: 1m}}`),
		reject("should reject an evictionSoftGracePeriod with no matching threshold", `{evictionSoftGracePeriod: {memory.available: 1m}}`),
		reject("should reject evictionSoft with no evictionSoftGracePeriod at all", `{evictionSoft: {memory.available: 10%}}`),
		reject("should reject an imageGC high threshold at or below the low threshold > inverted", `{imageGCHighThresholdPercent: 60, imageGCLowThresholdPercent: 80}`),
		reject("should reject an imageGC high threshold at or below the low threshold > equal", `{imageGCHighThresholdPercent: 70, imageGCLowThresholdPercent: 70}`),
		{name: "should reject a field Karpenter sets itself", doc: `{registerWithTaints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}]}`, mentions: "registerWithTaints"},
		{name: "should name the offending field in the error", doc: `{notAKubeletField: true}`, mentions: "notAKubeletField"},
		// ValidateKubeletConfig/ParseKubeletConfig invariant: what cannot
		// be decoded is refused.
		reject("invariant > evictionSoftGracePeriod that isn't a duration", `{evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: 5x}}`),
		reject("invariant > clusterDNS as a string rather than a list", `{clusterDNS: 10.0.0.10}`),
		reject("invariant > maxPods as a bool", `{maxPods: true}`),
		reject("invariant > podsPerCore as a string", `{podsPerCore: "10"}`),
		reject("invariant > kubeReserved with non-string values", `{kubeReserved: {cpu: 1}}`),
		reject("invariant > systemReserved with non-string values", `{systemReserved: {cpu: 1}}`),
		reject("invariant > evictionHard with non-string values", `{evictionHard: {memory.available: 5}}`),
		reject("invariant > evictionSoft with non-string values", `{evictionSoft: {memory.available: 5}}`),
		reject("invariant > evictionMaxPodGracePeriod as a string", `{evictionMaxPodGracePeriod: "30"}`),
		reject("invariant > imageGCHighThresholdPercent as a string", `{imageGCHighThresholdPercent: "80"}`),
		reject("invariant > imageGCLowThresholdPercent as a string", `{imageGCLowThresholdPercent: "70"}`),
		reject("invariant > cpuCFSQuota as a string", `{cpuCFSQuota: "true"}`),
	}
	agreed := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := kubeletconfig.Parse(config(t, c.doc))
			switch {
			case c.accept && err != nil:
				t.Errorf("the reference accepts; nodewright refuses: %v", err)
			case !c.accept && err == nil:
				t.Errorf("the reference refuses; nodewright accepts")
			case err != nil && !strings.Contains(err.Error(), c.mentions):
				t.Errorf("the refusal does not name %q: %v", c.mentions, err)
			default:
				agreed++
			}
		})
	}
	// Every violation is reported, not the first alone.
	_, err := kubeletconfig.Parse(config(t, `{podsPerCore: -1, kubeReserved: {gpu: "1", cpu: "-1"}, evictionHard: {notASignal: 5%}}`))
	var bad *kubeletconfig.Error
	if !errors.As(err, &bad) || len(bad.Problems) < 4 {
		t.Errorf("want at least 4 problems reported, got %v", err)
	}
	t.Logf("%s%d cases: nodewright agrees on %d", file, len(cases), agreed)
}

// The v1.14 LTS line refused these spec.kubelet values at apply time
// (its CRD typed the field; v1.14.3's ec2nodeclass_validation_cel
// "Kubelet" cases); v1.15 admits the open map and its controller reports
// each on ValidationSucceeded with reason InvalidKubeletConfiguration, as
// nodewright does. The succeeding cases of the same context succeed.
func TestV114KubeletCasesAreReportedAsV115Does(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		fails     bool
	}{
		{"should fail on kubeReserved with invalid keys", `{kubeReserved: {pods: "2"}}`, true},
		{"should fail on systemReserved with invalid keys", `{systemReserved: {pods: "2"}}`, true},
		{"should succeed on evictionHard with valid keys", `{evictionHard: {memory.available: 5%, nodefs.available: 10%, nodefs.inodesFree: 15%, imagefs.available: 5%, imagefs.inodesFree: 5%, pid.available: 5%}}`, false},
		{"should fail on evictionHard with invalid keys", `{evictionHard: {memory: 5%}}`, true},
		{"should fail on invalid formatted percentage value in evictionHard", `{evictionHard: {memory.available: 5%3}}`, true},
		{"should fail on invalid percentage value (too large) in evictionHard", `{evictionHard: {memory.available: 110%}}`, true},
		{"should fail on invalid quantity value in evictionHard", `{evictionHard: {memory.available: 110GB}}`, true},
		{"should succeed on evictionSoft with valid keys", `{evictionSoft: {memory.available: 5%, nodefs.available: 10%, nodefs.inodesFree: 15%, imagefs.available: 5%, imagefs.inodesFree: 5%, pid.available: 5%},
			evictionSoftGracePeriod: {memory.available: 1m0s, nodefs.available: 1m30s, nodefs.inodesFree: 5m0s, imagefs.available: 1h0m0s, imagefs.inodesFree: 24h0m0s, pid.available: 1m0s}}`, false},
		{"should fail on evictionSoft with invalid keys", `{evictionSoft: {memory: 5%}, evictionSoftGracePeriod: {memory: 1m0s}}`, true},
		{"should fail on invalid formatted percentage value in evictionSoft", `{evictionSoft: {memory.available: 5%3}, evictionSoftGracePeriod: {memory.available: 1m0s}}`, true},
		{"should fail on invalid percentage value (too large) in evictionSoft", `{evictionSoft: {memory.available: 110%}, evictionSoftGracePeriod: {memory.available: 1m0s}}`, true},
		{"should fail on invalid quantity value in evictionSoft", `{evictionSoft: {memory.available: 110GB}, evictionSoftGracePeriod: {memory.available: 1m0s}}`, true},
		{"should fail when eviction soft doesn't have matching grace period", `{evictionSoft: {memory.available: 200Mi}}`, true},
		{"should succeed on a valid imageGCHighThresholdPercent", `{imageGCHighThresholdPercent: 10}`, false},
		{"should fail when imageGCHighThresholdPercent is less than imageGCLowThresholdPercent", `{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}`, true},
		{"should fail when imageGCLowThresholdPercent is greather than imageGCHighThresheldPercent", `{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}`, true},
		{"should succeed on evictionSoftGracePeriod with valid keys", `{evictionSoft: {memory.available: 5%, nodefs.available: 10%, nodefs.inodesFree: 15%, imagefs.available: 5%, imagefs.inodesFree: 5%, pid.available: 5%},
			evictionSoftGracePeriod: {memory.available: 1m0s, nodefs.available: 1m30s, nodefs.inodesFree: 5m0s, imagefs.available: 1h0m0s, imagefs.inodesFree: 24h0m0s, pid.available: 1m0s}}`, false},
		{"should fail on evictionSoftGracePeriod with invalid keys", `{evictionSoftGracePeriod: {memory: 1m0s}}`, true},
		{"should fail when eviction soft grace period doesn't have matching threshold", `{evictionSoftGracePeriod: {memory.available: 1m0s}}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kubeletconfig.Parse(config(t, c.doc))
			var bad *kubeletconfig.Error
			switch {
			case !c.fails && err != nil:
				t.Errorf("refused: %v", err)
			case c.fails && (!errors.As(err, &bad) || bad.Reason != awsv1.ReasonInvalidKubeletConfiguration):
				t.Errorf("want ValidationSucceeded=False with reason %s, got %v", awsv1.ReasonInvalidKubeletConfiguration, err)
			}
		})
	}
}
