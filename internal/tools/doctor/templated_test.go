package doctor

import (
	"strings"
	"testing"
)

// User data kept in Terraform (a templatefile with the cluster's
// attributes), as users paste it: the correct one is clean, its broken
// twin names the real fault, not the template.
func TestTerraformTemplatedUserData(t *testing.T) {
	const script = `#!/bin/bash
set -o xtrace
/etc/eks/bootstrap.sh ${cluster_name} \
  --b64-cluster-ca ${module.eks.cluster_certificate_authority_data} \
  --apiserver-endpoint ${module.eks.cluster_endpoint} \
  --kubelet-extra-args '--node-labels=team=payments%{ if enable_taints } --register-with-taints=karpenter.sh/unregistered=:NoExecute%{ endif }'
echo "$${HOSTNAME} joined"
`
	r := diagnose(t, Input{Objects: loadText(t, termClass("Custom", "{name: amazon-eks-node-1.31-v20250123, owner: amazon}", script, ""))})
	if r.HasErrors() {
		t.Errorf("the correct templated user data has errors: %+v", r.Findings)
	}
	f := expectOne(t, r, CodeTemplated, Info, "EC2NodeClass/nodes", "spec.userData", "${module.eks.cluster_endpoint} as https://")
	if !strings.Contains(f.Fix, "helm template") {
		t.Errorf("the fix says not how to check the values: %s", f.Fix)
	}
	// The twin without the registration taint: the fault, not the template.
	broken := strings.Replace(script, "%{ if enable_taints } --register-with-taints=karpenter.sh/unregistered=:NoExecute%{ endif }", "", 1)
	r = diagnose(t, Input{Objects: loadText(t, termClass("Custom", "{name: amazon-eks-node-1.31-v20250123, owner: amazon}", broken, ""))})
	expectOne(t, r, CodeCustomMissingUnregistered, Error, "EC2NodeClass/nodes")
	// A plain shell script's ${VAR} is the shell's: nothing is filled.
	shell := "#!/bin/bash\nCLUSTER=orders-eu\n/etc/eks/bootstrap.sh ${CLUSTER} --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered=:NoExecute'\n"
	r = diagnose(t, Input{Objects: loadText(t, termClass("Custom", "{name: amazon-eks-node-1.31-v20250123, owner: amazon}", shell, ""))})
	expectNone(t, r, CodeTemplated)
}

// A Helm-templated NodeConfig for AL2023.
func TestHelmTemplatedUserData(t *testing.T) {
	const nodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: {{ .Values.maxPods }}
    flags:
      - --node-labels=team={{ .Values.team | quote }}
`
	r := diagnose(t, Input{Objects: loadText(t, termClass("AL2023", "{alias: al2023@latest}", nodeConfig, ""))})
	expectOne(t, r, CodeTemplated, Info, "EC2NodeClass/nodes", "{{ .Values.maxPods }} as 110")
	expectNone(t, r, CodeNodeNeverJoins, CodeBootNotModelled)
}
