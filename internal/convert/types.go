package convert

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// The older API versions' shapes, as their CRDs served them: decoded
// strictly, so a field they never had is named, not dropped.

// v1beta1 (karpenter.sh/v1beta1, Karpenter v0.32 to v0.37, and served
// beside v1 by v1.0).

type nodePoolV1beta1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              nodePoolSpecV1beta1 `json:"spec"`
	Status            poolStatusV1beta1   `json:"status,omitempty"`
}

type nodePoolSpecV1beta1 struct {
	Template   templateV1beta1     `json:"template"`
	Disruption *disruptionV1beta1  `json:"disruption,omitempty"`
	Limits     corev1.ResourceList `json:"limits,omitempty"`
	Weight     *int32              `json:"weight,omitempty"`
}

type disruptionV1beta1 struct {
	ConsolidateAfter    *string         `json:"consolidateAfter,omitempty"`
	ConsolidationPolicy string          `json:"consolidationPolicy,omitempty"`
	ExpireAfter         *string         `json:"expireAfter,omitempty"`
	Budgets             []budgetV1beta1 `json:"budgets,omitempty"`
}

type budgetV1beta1 struct {
	Nodes    string           `json:"nodes"`
	Schedule *string          `json:"schedule,omitempty"`
	Duration *metav1.Duration `json:"duration,omitempty"`
}

type templateV1beta1 struct {
	Metadata templateMeta     `json:"metadata,omitempty"`
	Spec     claimSpecV1beta1 `json:"spec"`
}

type templateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type claimSpecV1beta1 struct {
	Taints        []corev1.Taint       `json:"taints,omitempty"`
	StartupTaints []corev1.Taint       `json:"startupTaints,omitempty"`
	Requirements  []requirementV1beta1 `json:"requirements"`
	Resources     *claimResources      `json:"resources,omitempty"`
	Kubelet       *kubeletV1beta1      `json:"kubelet,omitempty"`
	NodeClassRef  *nodeClassRefV1beta1 `json:"nodeClassRef"`
}

type claimResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

type requirementV1beta1 struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

type nodeClassRefV1beta1 struct {
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// kubeletV1beta1 is the kubelet configuration a v1beta1 NodePool (and a
// v1alpha5 Provisioner's kubeletConfiguration) carried; v1 has it on the
// EC2NodeClass.
type kubeletV1beta1 struct {
	ClusterDNS                  []string                   `json:"clusterDNS,omitempty"`
	MaxPods                     *int32                     `json:"maxPods,omitempty"`
	PodsPerCore                 *int32                     `json:"podsPerCore,omitempty"`
	SystemReserved              map[string]string          `json:"systemReserved,omitempty"`
	KubeReserved                map[string]string          `json:"kubeReserved,omitempty"`
	EvictionHard                map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32                     `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32                     `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32                     `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool                      `json:"cpuCFSQuota,omitempty"`
}

type poolStatusV1beta1 struct {
	Resources  corev1.ResourceList `json:"resources,omitempty"`
	Conditions []metav1.Condition  `json:"conditions,omitempty"`
}

type nodeClaimV1beta1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              claimSpecV1beta1   `json:"spec"`
	Status            claimStatusV1beta1 `json:"status,omitempty"`
}

type claimStatusV1beta1 struct {
	NodeName    string              `json:"nodeName,omitempty"`
	ProviderID  string              `json:"providerID,omitempty"`
	ImageID     string              `json:"imageID,omitempty"`
	Capacity    corev1.ResourceList `json:"capacity,omitempty"`
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	Conditions  []metav1.Condition  `json:"conditions,omitempty"`
}

// karpenter.k8s.aws/v1beta1: the shapes v1 kept (subnet and security
// group terms, metadata options, the status's subnets and groups) are
// v1's own types.

type nodeClassV1beta1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              nodeClassSpecV1beta1   `json:"spec,omitempty"`
	Status            nodeClassStatusV1beta1 `json:"status,omitempty"`
}

type nodeClassSpecV1beta1 struct {
	SubnetSelectorTerms        []awsv1.SubnetSelectorTerm        `json:"subnetSelectorTerms"`
	SecurityGroupSelectorTerms []awsv1.SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	AssociatePublicIPAddress   *bool                             `json:"associatePublicIPAddress,omitempty"`
	AMISelectorTerms           []amiTerm                         `json:"amiSelectorTerms,omitempty"`
	AMIFamily                  *string                           `json:"amiFamily"`
	UserData                   *string                           `json:"userData,omitempty"`
	Role                       string                            `json:"role,omitempty"`
	InstanceProfile            *string                           `json:"instanceProfile,omitempty"`
	Tags                       map[string]string                 `json:"tags,omitempty"`
	BlockDeviceMappings        []*blockDeviceMapping             `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy        *string                           `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring         *bool                             `json:"detailedMonitoring,omitempty"`
	MetadataOptions            *awsv1.MetadataOptions            `json:"metadataOptions,omitempty"`
	Context                    *string                           `json:"context,omitempty"`
}

// amiTerm is an AMI selector term of v1beta1 (v1's has an alias and an
// SSM parameter besides); subnet and security group terms are v1's.
type amiTerm struct {
	Tags  map[string]string `json:"tags,omitempty"`
	ID    string            `json:"id,omitempty"`
	Name  string            `json:"name,omitempty"`
	Owner string            `json:"owner,omitempty"`
}

type blockDeviceMapping struct {
	DeviceName *string      `json:"deviceName,omitempty"`
	EBS        *blockDevice `json:"ebs,omitempty"`
	RootVolume bool         `json:"rootVolume,omitempty"`
}

type blockDevice struct {
	DeleteOnTermination *bool              `json:"deleteOnTermination,omitempty"`
	Encrypted           *bool              `json:"encrypted,omitempty"`
	IOPS                *int64             `json:"iops,omitempty"`
	KMSKeyID            *string            `json:"kmsKeyID,omitempty"`
	SnapshotID          *string            `json:"snapshotID,omitempty"`
	Throughput          *int64             `json:"throughput,omitempty"`
	VolumeSize          *resource.Quantity `json:"volumeSize,omitempty"`
	VolumeType          *string            `json:"volumeType,omitempty"`
}

type nodeClassStatusV1beta1 struct {
	Subnets         []awsv1.Subnet        `json:"subnets,omitempty"`
	SecurityGroups  []awsv1.SecurityGroup `json:"securityGroups,omitempty"`
	AMIs            []statusAMI           `json:"amis,omitempty"`
	InstanceProfile string                `json:"instanceProfile,omitempty"`
	Conditions      []metav1.Condition    `json:"conditions,omitempty"`
}

type statusAMI struct {
	ID           string                           `json:"id"`
	Name         string                           `json:"name,omitempty"`
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}
