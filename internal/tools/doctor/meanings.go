package doctor

// Meanings say, for the reference of finding codes (docs/reference/doctor-codes.md),
// what each code reports. Every code has one.
var Meanings = map[string]string{
	"requirement-on-no-instance-label":           "a NodePool requirement on a label no instance type has, named as one they do (another autoscaler's `eks.amazonaws.com/capacityType`, `node.kubernetes.io/instance-family`): it chooses no instance type and only labels the nodes; the fix is the key instance types have, with its values",
	"userdata-unreadable":                        "user data its family's reader cannot read: a MIME document without the empty line that ends a header block (the fix says which), Bottlerocket settings that are not TOML (a folded `userData: >` joins their lines); nothing launched reads it",
	"templated-input":                            "a NodePool or EC2NodeClass of manifests holds Terraform (`${var.x}`, `${module.eks.cluster_endpoint}`, `%{ if }`) or Helm (`{{ .Values.x }}`) expressions: the fields named, and the values of the expressions' shapes the user data was checked with (the values themselves are checked once rendered)",
	"node-identity-not-a-name":                   "`spec.role` or `spec.instanceProfile` given as an IAM ARN where the API takes a name; the fix is the name (and the node role checks use the role the ARN names, never an ARN nested in another)",
	"node-role-is-controller-role":               "an EC2NodeClass's `spec.role` is the controller's own IAM role: its ServiceAccount's `eks.amazonaws.com/role-arn` (IRSA) or, with `--cloud aws`, its Pod Identity association (an error); or a role named as a controller's (a warning): nodes need the node role",
	"startup-taint-is-registration-taint":        "`karpenter.sh/unregistered` listed in a NodePool's `startupTaints`: every node registers with it and the controller removes it itself, so the entry does nothing; remove it",
	"input-refused":                              "an input document could not be read (`-o json` and `-o yaml` only; the table is the error itself): its file and line, what is wrong with it (a key given twice, a misspelt kind or field, with the nearest), and that nothing was checked; exit status 1",
	"ami-os-contradicts-family":                  "an AMI term selects an EKS-optimized image of another OS than `amiFamily` (its name, SSM path or, in a dump, `status.amis` says which): that image's boot reads what nodewright launches for the family, and the node never joins; the fix is the family's alias, or the family of the AMI",
	"ami-alias-malformed":                        "an alias whose version no image has: a second `@` (`al2023@latest@foo`, which crash-loops Karpenter's controller) or a version not in the family's release form (`v20250123`, `v1.30.0`)",
	"converted-from-older-api":                   "an object of an older API (`karpenter.sh/v1beta1`, `karpenter.k8s.aws/v1beta1`, a v1alpha5 `Provisioner` or v1alpha1 `AWSNodeTemplate`) was read as the v1 object it converts to and checked as that; says what the conversion changed; `nodewright convert -f` prints the objects to commit",
	"kubelet-in-conversion-annotation":           "a NodePool carries the kubelet configuration Karpenter v1.0's conversion kept in the `compatibility.karpenter.sh/v1beta1-kubelet-conversion` annotation, which v1.1 and later ignore: the `spec.kubelet` to give its EC2NodeClass; or, with the class among the inputs, that the class is read with it",
	"userdata-overrides-registration-taints":     "user data replaces the kubelet's registration taints (nodeadm flags or `registerWithTaints`, a script calling bootstrap.sh, Bottlerocket `node-taints`), or a node registered without `karpenter.sh/unregistered` (S1)",
	"al2-bootstrap-args-malformed":               "bootstrap.sh arguments it does not read as meant: `--opt=value`, `--kubelet-extra-args` given twice, a single-quoted part with a space inside it, `--help` or an option without its value (S3)",
	"custom-userdata-missing-unregistered-taint": "Custom user data never registers `karpenter.sh/unregistered:NoExecute` (S3)",
	"node-role-not-mapped":                       "the node role is neither in `aws-auth` with `system:bootstrappers`, `system:nodes` and `system:node:{{EC2PrivateDNSName}}` nor an `EC2_LINUX` access entry; says when the controller's role is mapped instead, or the role is mapped with its IAM path (`role/eks/nodes/NAME`, which EKS never matches); an existing entry is to be replaced, a missing one added (S4). Without `--cloud aws` the access entries are not read and the finding says so; it is a warning where a NodeClaim of the class has registered (something admits the role)",
	"ami-architecture-mismatch":                  "none of the architectures a NodePool's instance types have (or one it names in `kubernetes.io/arch`) has an AMI in its EC2NodeClass; the fix names an AMI term for it (S5)",
	"pod-incompatible-with-nodepools":            "a workload's pods fit no NodePool (one finding per workload, with its pod count; bare pods per namespace): the planner's reason, the closest NodePool, what blocks it, and what to change with a value (S5)",
	"cloud-provider-taint-not-removed":           "nodes keep `node.cloudprovider.kubernetes.io/uninitialized` past `--grace` (S2)",
	"startup-taint-not-removed":                  "a Ready node keeps a NodePool startupTaint past `--grace`",
	"startup-taint-never-removed":                "before any launch: a NodePool startupTaint none of the input's DaemonSets tolerates, so no agent can run on the node to remove it (with no DaemonSet in the input it is `not-checked`)",
	"userdata-format-not-read-by-family":         "user data the AMI family never reads, its settings silently lost: a nodeadm NodeConfig on AL2 or Bottlerocket, a script on Bottlerocket, TOML on AL2 or AL2023, a script calling bootstrap.sh on AL2023 (which has none)",
	"userdata-kubelet-setting-overridden":        "user data sets what nodewright's own configuration, merged after it, always sets: AL2023 NodeConfig `maxPods` or `clusterDNS`, Bottlerocket `max-pods`, `cluster-dns-ip` or the cluster settings; says which `spec.kubelet` field to use (a `clusterDNS` equal to `spec.kubelet.clusterDNS`, or with no `spec.kubelet.clusterDNS` to compare, is not reported)",
	"extended-resource-not-registered":           "a GPU or other extended resource of the instance type never appeared on the node",
	"registration-timeouts-repeating":            "a NodePool's NodeClaims keep timing out unregistered, with the most likely cause",
	"prices-not-current":                         "an EC2NodeClass's launches are priced by the built-in table or the last known prices (`PricesCurrent=False`), since when and what to grant",
	"node-unhealthy":                             "a node fails a repair policy (a node condition past its toleration): when nodewright replaces it",
	"node-repair-held":                           "more than a fifth of a NodePool's nodes fail, so repair replaces none of them, and their pods wait",
	"node-not-initialized-never-disrupted":       "a node registered past `--grace` and never initialized: nodewright never consolidates, drifts or empties it",
	"pdb-never-allows-disruption":                "a PodDisruptionBudget allows no eviction even with all its pods healthy: its nodes are never consolidated or drifted",
	"node-reboot-failed":                         "node repair's reboot of a node failed and the node was kept (its drain bound could not be read, or its instance is not nodewright's)",
	"capacity-buffer-not-ready":                  "a CapacityBuffer keeps no room: its PodTemplate or workload cannot be found, or its settings cannot be resolved (`ReadyForProvisioning=False`)",
	"check-failed":                               "an AWS call kept a check from finishing; the others ran",
	"ami-not-found":                              "the account has no image an EC2NodeClass's `amiSelectorTerms` select (`--cloud`): nothing launches from it",
	"nodeclass-not-found":                        "a NodePool's `nodeClassRef` names an EC2NodeClass that does not exist, with the nearest name (did you mean)",
	"kubelet-configuration-refused":              "`spec.kubelet` the controller refuses (`ValidationSucceeded=False`, its reason and message): nothing launches; `registerWithTaints` there is reported as `userdata-overrides-registration-taints` with the taints to put on the NodePool",
	"resource-claims-unsatisfiable":              "a workload's pods claim devices (DRA) that no instance type the NodePools admit has: the DeviceClass that does not exist, the request whose selectors match no device, the count no type has (with the closest), no GPU family admitted, or `--ignore-dra-requests`; nothing is launched for them",
	"dra-driver-not-running":                     "pods claim devices of a DRA driver whose kubelet plugin would not run on the nodes launched for them: no node publishes its devices and no DaemonSet of the input is the driver's, or its DaemonSet does not run on the NodePool (taints, affinity); such NodeClaims stay `Initialized=Unknown` (DRADriverPoolsNotPublished). Without DaemonSets in the input it is `not-checked`",
	"userdata-too-large":                         "user data over EC2's 16 KB limit, by itself or once nodewright's bootstrap is merged in: every launch would be refused",
	"windows-userdata-does-not-parse":            "Windows user data PowerShell cannot parse, so none of it runs, the bootstrap included: `<powershell>` or `<persist>` tags inside `spec.userData` (nodewright writes its own block), a string left open",
	"windows-bootstrap-call-fails":               "a call of `Start-EKSBootstrap.ps1` in the user data that PowerShell refuses: a parameter the script does not have (`-ClusterName`), an ambiguous prefix, no `-EKSClusterName`",
	"windows-ipam-not-enabled":                   "a NodePool launches Windows nodes and `kube-system/amazon-vpc-cni` does not set `enable-windows-ipam: \"true\"`: pods there get no IP address and stay `ContainerCreating` (offline without that ConfigMap it is `not-checked`)",
	"windows-node-role-without-kube-proxy-group": "a Windows EC2NodeClass's node role is in `aws-auth` without `eks:kube-proxy-windows`, or has an `EC2_LINUX` access entry instead of `EC2_WINDOWS`: kube-proxy on its nodes is refused, so pods there cannot reach Services",
	"pod-without-os-placed-on-windows":           "the plan puts pods that do not select `kubernetes.io/os` on Windows nodes, where a Linux image does not run; says to select the OS or taint the Windows NodePool",
	"windows-pod-placed-on-linux":                "the plan puts pods of a Windows image (Server Core, Nano Server, `mcr.microsoft.com/windows/...`) that do not select `kubernetes.io/os` on Linux nodes",
	"daemonset-without-os-runs-on-windows":       "a DaemonSet that does not select `kubernetes.io/os` tolerates a Windows NodePool: its Linux image never starts on the Windows nodes, and its requests are kept free on each; says to select `kubernetes.io/os: linux`",
	"userdata-node-never-joins":                  "as the node reads its user data (the family's boot model: cloud-init, bootstrap.sh or nodeadm, the kubelet's own checks), the boot stops before the kubelet registers: a bootstrap.sh call it refuses, a NodeConfig nodeadm cannot decode, a kubelet argument the kubelet exits on (a `kubernetes.io` label it may not set, a taint effect it does not know); nothing launches",
	"userdata-boot-not-modelled":                 "what the node does with its user data depends on something the boot model does not run (a command's output or exit status, a construct the sandbox refuses): no verdict either way; says how to check on a node",
	"not-checked":                                "a check that could not run on this input: what was not checked and the command that checks it",
}

// Groups are the finding codes as users meet them, in that order: the
// input itself, then what keeps an EC2NodeClass or a NodePool from
// launching, what keeps a launched node from joining, from
// initializing, and what holds nodes once they run.
var Groups = []struct {
	Title string
	Codes []string
}{
	{"The input itself", []string{"input-refused", "converted-from-older-api", "kubelet-in-conversion-annotation", "templated-input", "not-checked", "check-failed"}},
	{"Before launch: the EC2NodeClass's AMIs and identity", []string{"nodeclass-not-found", "ami-not-found", "ami-alias-malformed", "ami-os-contradicts-family", "ami-architecture-mismatch",
		"node-identity-not-a-name", "node-role-is-controller-role", "kubelet-configuration-refused", "prices-not-current"}},
	{"Before launch: the user data", []string{"userdata-unreadable", "userdata-node-never-joins", "userdata-overrides-registration-taints", "custom-userdata-missing-unregistered-taint",
		"al2-bootstrap-args-malformed", "userdata-format-not-read-by-family", "userdata-kubelet-setting-overridden", "userdata-too-large", "userdata-boot-not-modelled",
		"windows-userdata-does-not-parse", "windows-bootstrap-call-fails"}},
	{"Before launch: the NodePools and the pods", []string{"pod-incompatible-with-nodepools", "requirement-on-no-instance-label", "resource-claims-unsatisfiable", "dra-driver-not-running",
		"startup-taint-never-removed", "startup-taint-is-registration-taint", "windows-ipam-not-enabled", "pod-without-os-placed-on-windows", "windows-pod-placed-on-linux",
		"daemonset-without-os-runs-on-windows", "capacity-buffer-not-ready"}},
	{"Registration: the node joins", []string{"node-role-not-mapped", "windows-node-role-without-kube-proxy-group", "registration-timeouts-repeating"}},
	{"Initialization: the node becomes usable", []string{"cloud-provider-taint-not-removed", "startup-taint-not-removed", "extended-resource-not-registered", "node-not-initialized-never-disrupted"}},
	{"Running: repair and disruption", []string{"node-unhealthy", "node-repair-held", "node-reboot-failed", "pdb-never-allows-disruption"}},
}
