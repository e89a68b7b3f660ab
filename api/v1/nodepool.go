package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool describes a family of nodes nodewright may launch for pending
// pods: the constraints every node meets, how nodes are disrupted, and how
// much capacity the pool may hold.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.nodes"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Rollout",type="string",JSONPath=".status.conditions[?(@.type==\"RolloutInProgress\")].message",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodePoolSpec `json:"spec"`
	// +optional
	Status NodePoolStatus `json:"status,omitzero"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired shape and behaviour of a NodePool.
//
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="replicas cannot be set or unset on an existing NodePool: a static NodePool (replicas set) cannot become dynamic, nor the reverse; create another NodePool instead"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits))",message="a static NodePool (replicas set) supports only limits.nodes; remove the other limits"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="a static NodePool (replicas set) has no weight: it does not launch for pods; remove weight"
type NodePoolSpec struct {
	// Replicas makes the NodePool static: it keeps exactly this many
	// nodes whatever the pods need (kubectl scale nodepool works on it),
	// never consolidates them, and replaces them when they drift or
	// expire. Unset, the NodePool launches nodes for pending pods.
	// It cannot be set or unset once the NodePool exists.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
	// Template is what every NodeClaim of this pool starts from.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls when nodes of this pool are consolidated and how
	// many may be disrupted at once.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption,omitzero"`
	// Limits cap the total capacity of the pool's nodes (cpu, memory,
	// nodes, or any resource); no node is launched past them.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Weight orders NodePools: higher weights are tried first.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeClaimTemplate is the template of a NodePool's NodeClaims.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta TemplateObjectMeta `json:"metadata,omitzero"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// TemplateObjectMeta holds the labels and annotations copied to every node.
type TemplateObjectMeta struct {
	// Labels are applied to every node of the pool. Labels that the kubelet,
	// the cloud or nodewright set themselves cannot be chosen here.
	// +kubebuilder:validation:MaxProperties=100
	// +mapType=atomic
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are applied to every node of the pool.
	// +mapType=granular
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the spec every NodeClaim of a pool starts from.
type NodeClaimTemplateSpec struct {
	// Taints the nodes carry; pods must tolerate them.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are present while a node starts and removed by another
	// component (a CNI or device plugin, for example) once it is ready.
	// Pods need not tolerate them.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes' labels: instance types, zones,
	// capacity types, architectures and any other label.
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",message="a requirement with operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",message="operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more, such as [\"4\"]"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",message="minValues cannot be larger than the number of values the requirement lists"
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef names the EC2NodeClass the nodes are launched with.
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="nodeClassRef.group cannot change; create another NodePool for another kind of node class"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="nodeClassRef.kind cannot change; create another NodePool for another kind of node class"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long draining a node may take;
	// pods still running at the deadline are deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long after creation a node is replaced, or Never.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove.
// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized;Balanced
type ConsolidationPolicy string

// Consolidation policies.
const (
	ConsolidationPolicyWhenEmpty                = ConsolidationPolicy("WhenEmpty")
	ConsolidationPolicyWhenEmptyOrUnderutilized = ConsolidationPolicy("WhenEmptyOrUnderutilized")
	// ConsolidationPolicyBalanced consolidates underutilized nodes only
	// when the share of the NodePool's cost a command saves is at least
	// the share of the NodePool's pods it moves.
	ConsolidationPolicyBalanced = ConsolidationPolicy("Balanced")
)

// Disruption controls voluntary disruption of a NodePool's nodes.
type Disruption struct {
	// ConsolidateAfter is how long a node must have had no pod scheduled to
	// or removed from it before consolidation considers it, or Never; 0s,
	// the default, consolidates at once.
	// +kubebuilder:default:="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitempty"`
	// ConsolidationPolicy: WhenEmpty removes only nodes without workload
	// pods; WhenEmptyOrUnderutilized also replaces or removes nodes whose
	// pods fit elsewhere; Balanced does so only when the share of the
	// NodePool's cost saved is at least the share of its pods moved.
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets limit how many nodes may be disrupted at once; when several
	// are active the most restrictive applies.
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.schedule) == has(x.duration))",message="schedule and duration must be set together: schedule says when the budget window opens, duration how long it stays open"
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// DisruptionReason names a kind of voluntary disruption.
// +kubebuilder:validation:Enum=Underutilized;Empty;Drifted;Unhealthy
type DisruptionReason string

// Disruption reasons a budget can be limited to.
const (
	DisruptionReasonUnderutilized = DisruptionReason("Underutilized")
	DisruptionReasonEmpty         = DisruptionReason("Empty")
	DisruptionReasonDrifted       = DisruptionReason("Drifted")
	// DisruptionReasonUnhealthy is node repair's replacement of unhealthy
	// nodes (v1.15).
	DisruptionReasonUnhealthy = DisruptionReason("Unhealthy")
	// DisruptionReasonExpired replaces a NodeClaim older than its
	// expireAfter. Budgets do not limit it, so it is not a budget reason.
	DisruptionReasonExpired = DisruptionReason("Expired")
)

// Budget limits the number of nodes of a pool disrupted at once, always or
// during a scheduled window.
type Budget struct {
	// Reasons limits the budget to these disruption reasons; all when empty.
	// +kubebuilder:validation:MaxItems=50
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is how many nodes may be disrupted at once: a count such as "5"
	// or a percentage of the pool's nodes such as "10%" (rounded up).
	// +kubebuilder:default:="10%"
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +required
	Nodes string `json:"nodes,omitempty"`
	// Schedule is a UTC cron schedule (five fields, or @daily and the like)
	// at which the budget window opens.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the window stays open after each scheduled start.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// NodePoolStatus is the observed state of a NodePool.
type NodePoolStatus struct {
	// Nodes is how many NodeClaims the pool has (those being deleted
	// included), the count kubectl scale reads.
	// +kubebuilder:default=0
	// +optional
	Nodes int64 `json:"nodes"`
	// Resources is the total capacity of the pool's nodes, with "nodes"
	// their count.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// NodeClassObservedGeneration is the generation of the node class the
	// NodeClassReady condition was computed from.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions: Ready, ValidationSucceeded, NodeClassReady and
	// NodeRegistrationHealthy.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// RegistrationBackoff is the relaunch backoff after NodeClaims of the
	// NodePool timed out before their node registered, kept here so that a
	// restarted or newly elected controller backs off as the last one did.
	// +optional
	RegistrationBackoff *RegistrationBackoff `json:"registrationBackoff,omitempty"`
	// DriftBackoff counts the replacements of drifted nodes that failed
	// in a row; once they reach the limit, drift of the NodePool pauses
	// (DriftAllowed=False) until its spec or node class changes, or the
	// annotation nodewright.dev/resume-drift gets a new value.
	// +optional
	DriftBackoff *DriftBackoff `json:"driftBackoff,omitempty"`
}

// DriftBackoff is what the replacements of a NodePool's drifted nodes
// went through.
type DriftBackoff struct {
	// Failures is how many replacements failed in a row.
	Failures int32 `json:"failures"`
	// LastFailure is when the last of them failed, and Cause why.
	LastFailure metav1.Time `json:"lastFailure"`
	// +optional
	Cause string `json:"cause,omitempty"`
	// Paused: drifted nodes are not replaced.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// NodePoolGeneration, NodeClassGeneration and ResumeAnnotation are the
	// NodePool's and its node class's generations and the value of
	// nodewright.dev/resume-drift when drift paused: a change to any
	// resumes it.
	// +optional
	NodePoolGeneration int64 `json:"nodePoolGeneration,omitempty"`
	// +optional
	NodeClassGeneration int64 `json:"nodeClassGeneration,omitempty"`
	// +optional
	ResumeAnnotation string `json:"resumeAnnotation,omitempty"`
}

// RegistrationBackoff is a NodePool's relaunch backoff.
type RegistrationBackoff struct {
	// Failures is how many NodeClaims in a row timed out unregistered.
	Failures int32 `json:"failures"`
	// LastTimeout is when the last of them timed out.
	LastTimeout metav1.Time `json:"lastTimeout"`
	// Until is when the NodePool launches again.
	Until metav1.Time `json:"until"`
	// Cause is the most likely cause found for the last timeout.
	// +optional
	Cause string `json:"cause,omitempty"`
}

// NodePool condition types.
const (
	ConditionValidationSucceeded     = "ValidationSucceeded"
	ConditionNodeClassReady          = "NodeClassReady"
	ConditionNodeRegistrationHealthy = "NodeRegistrationHealthy"
	// ConditionNodeRepairAllowed is False while more than a fifth of the
	// NodePool's nodes are unhealthy: node repair replaces none of them.
	ConditionNodeRepairAllowed = "NodeRepairAllowed"
	// ConditionRolloutInProgress is True while some of the NodePool's
	// NodeClaims are drifted and not yet replaced; its message counts
	// them and says what the budgets allow. Absent otherwise.
	ConditionRolloutInProgress = "RolloutInProgress"
	// ConditionDriftAllowed is False while drift of the NodePool is
	// paused because replacements of its drifted nodes kept failing.
	ConditionDriftAllowed = "DriftAllowed"
)

// AnnotationResumeDrift resumes the paused drift of a NodePool when it
// gets a new value.
const AnnotationResumeDrift = "nodewright.dev/resume-drift"

// NodePool condition and event reasons.
const (
	// ReasonRegistrationTimeout: a NodeClaim's node did not register in
	// time (the NodeClaim's event; NodeRegistrationHealthy=False).
	ReasonRegistrationTimeout = "RegistrationTimeout"
	// ReasonTooManyUnhealthyNodes: NodeRepairAllowed=False.
	ReasonTooManyUnhealthyNodes = "TooManyUnhealthyNodes"
	// ReasonDriftedNodes: RolloutInProgress=True.
	ReasonDriftedNodes = "DriftedNodes"
	// ReasonReplacementsFailing: DriftAllowed=False, and the NodePool's
	// event when drift pauses.
	ReasonReplacementsFailing = "ReplacementsFailing"
	// ReasonDriftResumed: the NodePool's event when paused drift resumes.
	ReasonDriftResumed = "DriftResumed"
)

// StatusConditions are the NodePool's status conditions.
func (in *NodePool) StatusConditions() []metav1.Condition { return in.Status.Conditions }
