// Package whatif answers "what would nodewright launch?" offline: it reads
// manifests (NodePools, EC2NodeClasses, workloads, nodes), runs the
// scheduler against the simulated account's instance types and AMIs, and
// reports the plan.
package whatif

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/api/crds"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/convert"
	"github.com/nodewright/nodewright/internal/manifest"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// Objects are the manifests simulate understands. Workloads are expanded
// into their pods.
type Objects struct {
	NodePools      []*v1.NodePool
	EC2NodeClasses []*awsv1.EC2NodeClass
	Pods           []*corev1.Pod
	DaemonSets     []*appsv1.DaemonSet
	Nodes          []*corev1.Node
	// NodeClaims are in flight: launched or planned, not yet a node.
	NodeClaims []*v1.NodeClaim
	PDBs       []*policyv1.PodDisruptionBudget
	// Skipped are the documents Load did not read.
	Skipped []Skipped
	// Conversions are the objects read from older APIs' documents.
	Conversions []Conversion
	// KeepDocuments keeps every document read in Documents, as written.
	KeepDocuments bool
	Documents     []Document
	// copies are the EC2NodeClasses settle made, by the class each copies.
	copies map[string]string
	// Ignored are the files of a directory (-f DIR) that hold nothing
	// nodewright reads, each with what it holds.
	Ignored []string
	// used counts the documents read; at is where Load is; where, where
	// each object read was.
	used int
	// readBytes is how much input was read, all inputs together.
	readBytes int64
	at        position
	where     map[string]position
	// Overlays change the price and capacity of instance types.
	Overlays []*v1alpha1.NodeOverlay
	// Namespaces, with their labels, for pod affinity namespace selectors.
	Namespaces []*corev1.Namespace
	// PVCs, PVs and StorageClasses give pods' volumes their topology.
	PVCs           []*corev1.PersistentVolumeClaim
	PVs            []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
	// CSINodes give nodes their volume attach limits.
	CSINodes []*storagev1.CSINode
	// RuntimeClasses add their overhead, node selector and tolerations to
	// the pods that name them, as the API server's RuntimeClass admission
	// does when the pods are created.
	RuntimeClasses []*nodev1.RuntimeClass
	// DeviceClasses, ResourceClaims, ResourceClaimTemplates and
	// ResourceSlices: the devices pods claim (DRA) and nodes have.
	DeviceClasses          []*resourcev1.DeviceClass
	ResourceClaims         []*resourcev1.ResourceClaim
	ResourceClaimTemplates []*resourcev1.ResourceClaimTemplate
	ResourceSlices         []*resourcev1.ResourceSlice
	// AWSAuth is the kube-system/aws-auth ConfigMap, when given.
	AWSAuth *corev1.ConfigMap
	// ServiceAccounts are those with an IAM role (IRSA's
	// eks.amazonaws.com/role-arn annotation): the controller's role is
	// its ServiceAccount's.
	ServiceAccounts []*corev1.ServiceAccount
	// VPCCNI is the VPC CNI's kube-system/amazon-vpc-cni ConfigMap, when
	// given: whether pods on Windows nodes get addresses.
	VPCCNI *corev1.ConfigMap
	// Now is the time decisions are made at; the current time when zero.
	Now time.Time
	// Region is the AWS region planned for: EC2NodeClasses whose status
	// names no subnet get three of its zones. Empty: the region of the
	// built-in catalog's prices.
	Region string
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints, when its configuration is given.
	DefaultSpread scheduling.SpreadDefaults
	// Settings are the controller's settings decisions are made with.
	Settings Settings
	// Controllers are the nodewright and Karpenter controller
	// Deployments read: how the cluster's controller decides.
	// ControllersNotRead says why a cluster's could not be listed.
	Controllers        []*Controller
	ControllersNotRead string
	// CapacityBuffers keep room for pods to come, with the PodTemplates
	// they name; workloads are the Deployments, StatefulSets and
	// ReplicaSets read, for buffers that name one.
	CapacityBuffers []*v1beta1.CapacityBuffer
	PodTemplates    []*corev1.PodTemplate
	workloads       map[string]workload
}

// State are the objects as state.Build reads them (CapacityBuffers
// resolved as their controller would).
func (o *Objects) State() state.Objects {
	buffers, templates, _ := o.buffers()
	return state.Objects{NodePools: o.NodePools, NodeClaims: o.NodeClaims, Nodes: o.Nodes, Pods: o.admitted(), DaemonSets: o.DaemonSets, PDBs: o.PDBs, Overlays: o.Overlays, Namespaces: o.Namespaces,
		PVCs: o.PVCs, PVs: o.PVs, StorageClasses: o.StorageClasses, CSINodes: o.CSINodes, CapacityBuffers: buffers, PodTemplates: templates,
		DeviceClasses: o.DeviceClasses, ResourceClaims: o.ResourceClaims, ResourceClaimTemplates: o.ResourceClaimTemplates, ResourceSlices: o.ResourceSlices}
}

func (o *Objects) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// Skipped is a document Load did not read: a kind nodewright has no use
// for (a Service, a ConfigMap other than aws-auth and amazon-vpc-cni, ...).
type Skipped struct {
	File string
	Line int
	Kind string
	Name string
}

func (s Skipped) String() string {
	return fmt.Sprintf("%s:%d: %s %s is not read", s.File, s.Line, s.Kind, s.Name)
}

// ReadKinds are the kinds Load reads.
const ReadKinds = "NodePools, NodeClaims, EC2NodeClasses, NodeOverlays, Pods and their workloads (Deployment, StatefulSet, ReplicaSet, Job), " +
	"ServiceAccounts with an IAM role, " +
	"DaemonSets, Nodes, PodDisruptionBudgets, Namespaces, volumes (PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode), " +
	"devices (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice), " +
	"RuntimeClasses, CapacityBuffers and PodTemplates, the aws-auth and amazon-vpc-cni ConfigMaps, Lists of them"

// Load reads multi-document YAML (or JSON). name labels errors and
// skipped documents (a file name); errors say the line a document starts
// on, and the line of a YAML syntax error. A file with nothing Load reads
// is an error that lists what it holds.
func (o *Objects) Load(name string, r io.Reader) error {
	left := MaxInputBytes - o.readBytes
	data, err := io.ReadAll(io.LimitReader(r, left+1))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	o.readBytes += int64(len(data))
	if int64(len(data)) > left {
		return &InputTooLargeError{Name: name}
	}
	used, skipped := o.used, len(o.Skipped)
	for _, d := range manifest.Split(data) {
		if d.Empty() {
			continue
		}
		if o.KeepDocuments {
			o.Documents = append(o.Documents, Document{File: name, Line: d.Line, Body: d.Body})
		}
		o.at = position{file: name, line: d.Line}
		if err := o.add(d.Body); err != nil {
			return manifest.Errorf(name, d, templateHint(name, d.Body, err))
		}
	}
	if err := o.settle(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if o.used == used {
		var held []string
		for _, s := range o.Skipped[skipped:] {
			held = append(held, strings.TrimSpace(s.Kind+" "+s.Name))
		}
		if len(held) == 0 {
			return &NothingReadError{Held: []string{"no documents"}, msg: fmt.Sprintf("%s: no documents (nodewright reads %s)", name, ReadKinds)}
		}
		return &NothingReadError{Held: held, msg: fmt.Sprintf("%s: nothing nodewright reads in it (%s); it reads %s", name, strings.Join(held, ", "), ReadKinds)}
	}
	return nil
}

// IRSARoleAnnotation names a ServiceAccount's IAM role (IAM roles for
// service accounts).
const IRSARoleAnnotation = "eks.amazonaws.com/role-arn"

// MaxInputBytes is the most manifest text the tools read, all inputs
// together (a pod as kubectl get -o yaml writes it takes some 5 to 8 KB,
// so tens of thousands of them fit). An endless input (-f /dev/zero, a
// stream that never ends) stops there with an error instead of filling
// memory.
var MaxInputBytes int64 = 256 << 20

// MaxPods is the most pods the tools plan: a workload's replicas (or a
// dump's pods) beyond it are an error naming the workload, not a plan
// that fills memory.
const MaxPods = 200_000

// InputTooLargeError is input beyond MaxInputBytes.
type InputTooLargeError struct{ Name string }

func (e *InputTooLargeError) Error() string {
	return fmt.Sprintf("%s: the inputs are over %d MiB, the most nodewright reads: give the manifests that matter (a namespace's, the NodePools and EC2NodeClasses), or check that -f names a file and not an endless stream", e.Name, MaxInputBytes>>20)
}

type position struct {
	file string
	line int
	// item is 1 + the index of the List item being read; 0 outside a
	// List.
	item int
}

// scheme has the types the tools read.
var scheme = runtime.NewScheme()

// decoder decodes manifests as the API server would (strictly: an
// unknown field is an error), into the types the controller lists.
var decoder = func() runtime.Decoder {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // the schemes of compiled-in types always register
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

func (o *Objects) add(doc []byte) error {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return duplicateKeyError(err)
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	if head.Kind == "" {
		return errors.New("the document has no kind: every object needs apiVersion and kind")
	}
	if err := checkGroupKind(head.APIVersion, head.Kind, head.Metadata.Name); err != nil {
		return err
	}
	if head.Kind == "List" { // kubectl get -o yaml
		return o.addList(head.Items)
	}
	if convert.Converts(head.APIVersion, head.Kind) {
		return o.addConverted(doc, head.TypeMeta, head.Metadata.Name)
	}
	read, err := o.decode(data, head.TypeMeta, head.Metadata.Name)
	if err != nil {
		return err
	}
	if read {
		if err := o.remember(head.Kind, head.Metadata.Namespace, head.Metadata.Name); err != nil {
			return err
		}
	}
	if !read {
		o.Skipped = append(o.Skipped, Skipped{File: o.at.file, Line: o.at.line, Kind: head.Kind, Name: head.Metadata.Name})
		return nil
	}
	o.used++
	return nil
}

// addList adds a List's items; the List itself does not count as read,
// unless it is empty (it says there is none).
func (o *Objects) addList(items []json.RawMessage) error {
	at := o.at
	defer func() { o.at = at }()
	for i, item := range items {
		o.at.item = i + 1
		if err := o.add(item); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	if len(items) == 0 {
		o.used++
	}
	return nil
}

// decode decodes a document (as JSON) of a kind simulate reads and adds
// it; false for a kind it does not read.
func (o *Objects) decode(doc []byte, tm metav1.TypeMeta, name string) (bool, error) {
	if readers[tm.Kind] == nil {
		return false, nil // not read, so not decoded: its fields are not nodewright's to judge
	}
	doc, fields, err := defaulted(doc)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", tm.Kind, name, err)
	}
	obj, gvk, err := decoder.Decode(doc, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err):
		return false, &manifest.FieldError{Path: "apiVersion", Err: fmt.Errorf("%s %s: apiVersion %s is not one nodewright reads (%s)", tm.Kind, name, tm.APIVersion, readVersions[tm.Kind])}
	case err != nil:
		hint := formerFields(tm.Kind, err)
		if hint == "" {
			hint = didYouMean(newObject(tm), err)
		}
		return false, fmt.Errorf("decoding %s %s: %w%s", tm.Kind, name, err, hint)
	}
	// What the API server would refuse is refused here, by its schema and
	// CEL rules and in its words (unknown fields, above, first, as
	// kubectl's strict field validation does).
	if fields != nil {
		if _, err := crds.Validate(context.Background(), fields); err != nil {
			return false, withPatternHints(err)
		}
	}
	reader := readers[gvk.Kind]
	if reader == nil {
		return false, nil
	}
	return reader(o, obj)
}

// newObject is an empty object of the type a document's kind decodes
// to; nil for a kind not registered.
func newObject(tm metav1.TypeMeta) runtime.Object {
	obj, err := scheme.New(tm.GroupVersionKind())
	if err != nil {
		return nil
	}
	return obj
}

// patternHints say in words what the API's patterns ask of a field (the
// API server names only the pattern), by the end of the field's path.
var patternHints = []struct {
	suffix *regexp.Regexp
	hint   string
}{
	{regexp.MustCompile(`\.budgets\[\d+\]\.nodes$`), "a whole number of nodes such as 5, or a percentage from 0% to 100% such as 10%"},
	{regexp.MustCompile(`\.budgets\[\d+\]\.duration$`), "whole hours and minutes such as 8h or 1h30m"},
	{regexp.MustCompile(`\.budgets\[\d+\]\.schedule$`), "a cron schedule of five fields (minute hour day-of-month month day-of-week) such as \"0 9 * * 1-5\", or @daily, @weekly and the like"},
	{regexp.MustCompile(`\.(consolidateAfter|expireAfter)$`), "a duration such as 30s, 15m or 720h, or Never"},
	{regexp.MustCompile(`\.terminationGracePeriod$`), "a duration such as 30s, 10m or 48h"},
	{regexp.MustCompile(`\.ebs\.volumeSize$`), "a whole number of Gi, G, Ti or T such as 20Gi or 1Ti, at most 64T (64000G, 58Ti or 59000Gi)"},
	{regexp.MustCompile(`\.nodeClassRef\.group$`), "an API group without a version, such as karpenter.k8s.aws (not karpenter.k8s.aws/v1)"},
	{regexp.MustCompile(`(aints\[\d+\]\.key|requirements\[\d+\]\.key)$`), "an optional DNS prefix and '/', then a name of letters, digits, '-', '_' and '.', such as example.com/dedicated"},
	{regexp.MustCompile(`(aints\[\d+\]\.value|requirements\[\d+\]\.values|labels\[[^]]+\])$`), "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
}

// withPatternHints adds to a refusal what each pattern it quotes means.
func withPatternHints(err error) error {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return err
	}
	var hints []string
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) || !strings.Contains(fe.Detail, "should match") {
			continue
		}
		for _, h := range patternHints {
			if h.suffix.MatchString(fe.Field) {
				hints = append(hints, fe.Field+" takes "+h.hint)
				break
			}
		}
	}
	if len(hints) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(hints, "; "))
}

// formerFields are fields earlier nodewright releases had and the
// reference's API does not: what to write instead.
var formerFieldFixes = []struct{ kind, field, fix string }{
	{"NodePool", `"spec.template.spec.labels"`, "a NodePool's node labels are spec.template.metadata.labels (beside spec.template.spec, not in it): move them there"},
	{"NodePool", `"spec.template.spec.annotations"`, "a NodePool's node annotations are spec.template.metadata.annotations: move them there"},
	{"NodePool", `"spec.template.metadata.taints"`, "a NodePool's taints are spec.template.spec.taints: move them there"},
	{"NodePool", `"spec.disruption.expireAfter"`, "in v1, expireAfter is spec.template.spec.expireAfter (v1beta1 had it under spec.disruption): move it there"},
	{"NodePool", `"spec.template.spec.kubelet"`, "in v1, the kubelet configuration is the EC2NodeClass's spec.kubelet (v1beta1 had it on the NodePool): move it there"},
	{"EC2NodeClass", `"spec.placementGroup"`, "spec.placementGroup was nodewright's own name for the field; the API's is spec.placementGroupSelector (name or id): " +
		"rename it, and move a partition to the NodePool as the requirement {key: karpenter.k8s.aws/placement-group-partition, operator: In, values: [\"N\"]}"},
	{"EC2NodeClass", `.vpcID"`, "securityGroupSelectorTerms[].vpcID was nodewright's own field; the API has none: select the groups by id, " +
		"or by tags only that VPC's groups carry"},
}

func formerFields(kind string, err error) string {
	for _, f := range formerFieldFixes {
		if f.kind == kind && strings.Contains(err.Error(), "unknown field") && strings.Contains(err.Error(), f.field) {
			return ": " + f.fix
		}
	}
	return ""
}

// defaulted is a document (JSON) of one of nodewright's CRDs with the defaults
// the CRD's schema declares filled in, as the API server fills them in on
// create (so a manifest and a dump of the object it makes read the
// same), and its fields to validate; any other document as it is, and no
// fields.
func defaulted(doc []byte) ([]byte, map[string]any, error) {
	// Whole numbers as int64, as the API server decodes them: its
	// validation rules tell integers from floats.
	var obj map[string]any
	if err := utiljson.Unmarshal(doc, &obj); err != nil {
		return nil, nil, err
	}
	ours, err := crds.Default(obj)
	if err != nil || !ours {
		return doc, nil, err
	}
	out, err := json.Marshal(obj)
	return out, obj, err
}

// readVersions name the apiVersion of each kind simulate reads.
var readVersions = map[string]string{
	"NodePool": "karpenter.sh/v1", "NodeClaim": "karpenter.sh/v1", "NodeOverlay": "karpenter.sh/v1alpha1", "EC2NodeClass": "karpenter.k8s.aws/v1",
	"Pod": "v1", "Node": "v1", "ServiceAccount": "v1", "Namespace": "v1", "ConfigMap": "v1", "PersistentVolumeClaim": "v1", "PersistentVolume": "v1",
	"Deployment": "apps/v1", "StatefulSet": "apps/v1", "ReplicaSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1",
	"PodDisruptionBudget": "policy/v1", "StorageClass": "storage.k8s.io/v1", "CSINode": "storage.k8s.io/v1",
	"CapacityBuffer": "autoscaling.x-k8s.io/v1beta1", "PodTemplate": "v1", "RuntimeClass": "node.k8s.io/v1",
	"DeviceClass": "resource.k8s.io/v1", "ResourceClaim": "resource.k8s.io/v1", "ResourceClaimTemplate": "resource.k8s.io/v1", "ResourceSlice": "resource.k8s.io/v1",
}

// readers add an object of each kind simulate reads, checking what the
// API server would refuse; false: the object is not read after all.
var readers = map[string]func(*Objects, runtime.Object) (bool, error){
	"NodePool": func(o *Objects, obj runtime.Object) (bool, error) { return appended(&o.NodePools, obj.(*v1.NodePool)) },
	"NodeClaim": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.NodeClaims, obj.(*v1.NodeClaim))
	},
	"NodeOverlay": func(o *Objects, obj runtime.Object) (bool, error) {
		return true, o.addOverlay(obj.(*v1alpha1.NodeOverlay))
	},
	"EC2NodeClass": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.EC2NodeClasses, obj.(*awsv1.EC2NodeClass))
	},
	"Pod": func(o *Objects, obj runtime.Object) (bool, error) { return true, o.addPod(obj.(*corev1.Pod)) },
	"ServiceAccount": func(o *Objects, obj runtime.Object) (bool, error) {
		sa := inDefault(obj.(*corev1.ServiceAccount))
		if sa.Annotations[IRSARoleAnnotation] == "" {
			return false, nil // a ServiceAccount without a role says nothing of the nodes
		}
		return appended(&o.ServiceAccounts, sa)
	},
	"Node": func(o *Objects, obj runtime.Object) (bool, error) { return appended(&o.Nodes, obj.(*corev1.Node)) },
	"Namespace": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.Namespaces, obj.(*corev1.Namespace))
	},
	"ConfigMap": func(o *Objects, obj runtime.Object) (bool, error) {
		return o.addConfigMap(obj.(*corev1.ConfigMap)), nil
	},
	"PersistentVolume": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.PVs, obj.(*corev1.PersistentVolume))
	},
	"StorageClass": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.StorageClasses, obj.(*storagev1.StorageClass))
	},
	"CSINode": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.CSINodes, obj.(*storagev1.CSINode))
	},
	"DeviceClass": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.DeviceClasses, obj.(*resourcev1.DeviceClass))
	},
	"ResourceClaim": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.ResourceClaims, inDefault(obj.(*resourcev1.ResourceClaim)))
	},
	"ResourceClaimTemplate": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.ResourceClaimTemplates, inDefault(obj.(*resourcev1.ResourceClaimTemplate)))
	},
	"ResourceSlice": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.ResourceSlices, obj.(*resourcev1.ResourceSlice))
	},
	"DaemonSet": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.DaemonSets, obj.(*appsv1.DaemonSet))
	},
	"PersistentVolumeClaim": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.PVCs, inDefault(obj.(*corev1.PersistentVolumeClaim)))
	},
	"PodDisruptionBudget": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.PDBs, inDefault(obj.(*policyv1.PodDisruptionBudget)))
	},
	"Deployment": func(o *Objects, obj runtime.Object) (bool, error) {
		d := obj.(*appsv1.Deployment)
		if c, ok := ControllerOf(d); ok {
			o.Controllers = append(o.Controllers, c)
		}
		return true, o.addWorkload("apps/v1", "Deployment", d.ObjectMeta, d.Spec.Replicas, d.Spec.Template)
	},
	"StatefulSet": func(o *Objects, obj runtime.Object) (bool, error) {
		s := obj.(*appsv1.StatefulSet)
		return true, o.addWorkload("apps/v1", "StatefulSet", s.ObjectMeta, s.Spec.Replicas, s.Spec.Template)
	},
	"ReplicaSet": func(o *Objects, obj runtime.Object) (bool, error) {
		rs := obj.(*appsv1.ReplicaSet)
		return true, o.addWorkload("apps/v1", "ReplicaSet", rs.ObjectMeta, rs.Spec.Replicas, rs.Spec.Template)
	},
	"CapacityBuffer": func(o *Objects, obj runtime.Object) (bool, error) {
		return true, o.addBuffer(obj.(*v1beta1.CapacityBuffer))
	},
	"RuntimeClass": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.RuntimeClasses, obj.(*nodev1.RuntimeClass))
	},
	"PodTemplate": func(o *Objects, obj runtime.Object) (bool, error) {
		return appended(&o.PodTemplates, inDefault(obj.(*corev1.PodTemplate)))
	},
	"Job": func(o *Objects, obj runtime.Object) (bool, error) {
		j := obj.(*batchv1.Job)
		return true, o.addWorkload("batch/v1", "Job", j.ObjectMeta, j.Spec.Parallelism, j.Spec.Template)
	},
}

// appended appends an object to its list.
func appended[T any](list *[]*T, obj *T) (bool, error) {
	*list = append(*list, obj)
	return true, nil
}

// inDefault puts a namespaced object without a namespace in "default", as
// kubectl apply would.
func inDefault[T metav1.Object](obj T) T {
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	return obj
}

func (o *Objects) addOverlay(ov *v1alpha1.NodeOverlay) error {
	if err := checkOverlay(ov); err != nil {
		return err
	}
	o.Overlays = append(o.Overlays, ov)
	return nil
}

func (o *Objects) addPod(pod *corev1.Pod) error {
	if err := checkPodSpec("Pod", pod.Name, "spec", &pod.Spec); err != nil {
		return err
	}
	if len(o.Pods) >= MaxPods {
		return fmt.Errorf("pod %s: over %d pods, the most nodewright plans at once: plan for a part of the cluster", pod.Name, MaxPods)
	}
	o.Pods = append(o.Pods, defaultNamespace(scheduling.RequestsAsStored(pod)))
	return nil
}

// addWorkload adds the pods a workload runs.
func (o *Objects) addWorkload(apiVersion, kind string, meta metav1.ObjectMeta, replicas *int32, tmpl corev1.PodTemplateSpec) error {
	if err := checkPodSpec(kind, meta.Name, "spec.template.spec", &tmpl.Spec); err != nil {
		return err
	}
	field := "spec.replicas"
	if kind == "Job" {
		field = "spec.parallelism"
	}
	n := ptr.Deref(replicas, 1)
	switch {
	case n < 0:
		return fmt.Errorf("%s %s: %s: Invalid value: %d: must be greater than or equal to 0 (the API server refuses it)", kind, meta.Name, field, n)
	case int64(len(o.Pods))+int64(n) > MaxPods:
		before := ""
		if len(o.Pods) > 0 {
			before = fmt.Sprintf(" with the %d read before", len(o.Pods))
		}
		return fmt.Errorf("%s %s: %s: %d pods%s are over %d, the most nodewright plans at once: plan with fewer replicas (the nodes scale with them) or for a part of the cluster", kind, meta.Name, field, n, before, MaxPods)
	}
	o.expand(apiVersion, kind, meta, replicas, tmpl)
	if o.workloads == nil {
		o.workloads = map[string]workload{}
	}
	o.workloads[workloadKey(cmp.Or(meta.Namespace, metav1.NamespaceDefault), kind, meta.Name)] = workload{template: tmpl, replicas: ptr.Deref(replicas, 1)}
	return nil
}

// addConfigMap reads the aws-auth and amazon-vpc-cni ConfigMaps of
// kube-system, and no other.
func (o *Objects) addConfigMap(cm *corev1.ConfigMap) bool {
	if cm.Namespace != "" && cm.Namespace != metav1.NamespaceSystem {
		return false
	}
	switch cm.Name {
	case "aws-auth":
		o.AWSAuth = cm
	case "amazon-vpc-cni":
		o.VPCCNI = cm
	default:
		return false
	}
	return true
}

// expand adds the pods a workload runs: replicas (1 when unset) copies of
// its template, named <workload>-<i>, controlled by the workload.
func (o *Objects) expand(apiVersion, kind string, meta metav1.ObjectMeta, replicas *int32, tmpl corev1.PodTemplateSpec) {
	n := int32(1)
	if replicas != nil {
		n = *replicas
	}
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		pod.Name = fmt.Sprintf("%s-%d", meta.Name, i)
		pod.Namespace = meta.Namespace
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: meta.Name, Controller: ptr.To(true)}}
		o.Pods = append(o.Pods, defaultNamespace(scheduling.RequestsAsStored(pod)))
	}
}

// checkOverlay refuses what the API server would of an overlay's
// requirements, price and adjustment.
func checkOverlay(ov *v1alpha1.NodeOverlay) error {
	for i, r := range ov.Spec.Requirements {
		if err := scheduling.ValidateOperator(r.Operator, r.Values); err != nil {
			return fmt.Errorf("NodeOverlay %s: spec.requirements[%d] (key %s): %w", ov.Name, i, r.Key, err)
		}
	}
	if ov.Spec.Price != nil && ov.Spec.PriceAdjustment != nil {
		return fmt.Errorf("NodeOverlay %s: set spec.price or spec.priceAdjustment, not both", ov.Name)
	}
	if err := state.ValidateOverlayPrice(ov.Spec); err != nil {
		return fmt.Errorf("NodeOverlay %s: %w", ov.Name, err)
	}
	if err := state.ValidateOverlayDevices(ov.Spec); err != nil {
		return fmt.Errorf("NodeOverlay %s: %w", ov.Name, err)
	}
	return nil
}

// checkPodSpec refuses the node affinity Kubernetes would: an unknown
// operator (pods have no Gte or Lte), or values that do not fit it.
func checkPodSpec(kind, name, field string, spec *corev1.PodSpec) error {
	if err := checkResources(kind, name, field, spec); err != nil {
		return err
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	var terms []corev1.NodeSelectorTerm
	if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		terms = req.NodeSelectorTerms
	}
	for _, pref := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, pref.Preference)
	}
	for _, term := range terms {
		for _, r := range term.MatchExpressions {
			err := scheduling.ValidateOperator(r.Operator, r.Values)
			if r.Operator == v1.NodeSelectorOpGte || r.Operator == v1.NodeSelectorOpLte {
				err = fmt.Errorf("operator %s is a NodePool's, not a pod's: use Gt or Lt (Gt N-1 for at least N)", r.Operator)
			}
			if err != nil {
				return fmt.Errorf("%s %s: %s.affinity.nodeAffinity (key %s): %w", kind, name, field, r.Key, err)
			}
		}
	}
	return nil
}

func defaultNamespace(p *corev1.Pod) *corev1.Pod {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	return p
}

// checkResources refuses what the API server refuses of a pod's
// containers' resources: a negative request or limit, and a request over
// its limit.
func checkResources(kind, name, field string, spec *corev1.PodSpec) error {
	for _, group := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i, c := range group.containers {
			at := fmt.Sprintf("%s.%s[%d].resources", field, group.field, i)
			for _, list := range []struct {
				name string
				rl   corev1.ResourceList
			}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
				for _, res := range slices.Sorted(maps.Keys(list.rl)) {
					if q := list.rl[res]; q.Sign() < 0 {
						return fmt.Errorf("%s %s: %s.%s.%s: Invalid value: %q: must be greater than or equal to 0 (the API server refuses it)", kind, name, at, list.name, res, q.String())
					}
				}
			}
			for _, res := range slices.Sorted(maps.Keys(c.Resources.Requests)) {
				limit, limited := c.Resources.Limits[res]
				if q := c.Resources.Requests[res]; limited && q.Cmp(limit) > 0 {
					return fmt.Errorf("%s %s: %s.requests.%s: Invalid value: %q: must be less than or equal to %s limit of %s (the API server refuses it)", kind, name, at, res, q.String(), res, limit.String())
				}
			}
		}
	}
	return nil
}
