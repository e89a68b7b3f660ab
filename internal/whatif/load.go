// Package whatif answers "what would nodewright launch?" offline: it reads
// manifests (NodePools, EC2NodeClasses, workloads, nodes), runs the
// scheduler against the simulated account's instance types and AMIs, and
// reports the plan.
package whatif

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
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
	// used counts the documents read; at is where Load is.
	used int
	at   position
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
	// AWSAuth is the kube-system/aws-auth ConfigMap, when given.
	AWSAuth *corev1.ConfigMap
	// Now is the time decisions are made at; the current time when zero.
	Now time.Time
}

// State are the objects as state.Build reads them.
func (o *Objects) State() state.Objects {
	return state.Objects{NodePools: o.NodePools, NodeClaims: o.NodeClaims, Nodes: o.Nodes, Pods: o.Pods, DaemonSets: o.DaemonSets, PDBs: o.PDBs, Overlays: o.Overlays, Namespaces: o.Namespaces,
		PVCs: o.PVCs, PVs: o.PVs, StorageClasses: o.StorageClasses, CSINodes: o.CSINodes}
}

func (o *Objects) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// Skipped is a document Load did not read: a kind nodewright has no use
// for (a Service, a ConfigMap other than aws-auth, ...).
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
	"DaemonSets, Nodes, PodDisruptionBudgets, Namespaces, volumes (PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode), the aws-auth ConfigMap, Lists of them"

// Load reads multi-document YAML (or JSON). name labels errors and
// skipped documents (a file name); errors say the line a document starts
// on, and the line of a YAML syntax error. A file with nothing Load reads
// is an error that lists what it holds.
func (o *Objects) Load(name string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	used, skipped := o.used, len(o.Skipped)
	for _, d := range manifest.Split(data) {
		if d.Empty() {
			continue
		}
		o.at = position{file: name, line: d.Line}
		if err := o.add(d.Body); err != nil {
			return manifest.Errorf(name, d, err)
		}
	}
	if o.used == used {
		var held []string
		for _, s := range o.Skipped[skipped:] {
			held = append(held, s.Kind+" "+s.Name)
		}
		if len(held) == 0 {
			return fmt.Errorf("%s: no documents (nodewright reads %s)", name, ReadKinds)
		}
		return fmt.Errorf("%s: nothing nodewright reads in it (%s); it reads %s", name, strings.Join(held, ", "), ReadKinds)
	}
	return nil
}

type position struct {
	file string
	line int
}

func (o *Objects) add(doc []byte) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	if meta.Kind == "" {
		return errors.New("the document has no kind: every object needs apiVersion and kind")
	}
	var object struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = yaml.Unmarshal(doc, &object)
	decode := func(into any) error {
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			return fmt.Errorf("decoding %s %s: %w", meta.Kind, object.Metadata.Name, err)
		}
		return nil
	}
	read := true
	defer func() {
		if read {
			o.used++
			return
		}
		o.Skipped = append(o.Skipped, Skipped{File: o.at.file, Line: o.at.line, Kind: meta.Kind, Name: object.Metadata.Name})
	}()
	switch meta.Kind {
	case "List": // kubectl get -o yaml
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(doc, &list); err != nil {
			return fmt.Errorf("decoding List: %w", err)
		}
		for i, item := range list.Items {
			if err := o.add(item); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		if len(list.Items) > 0 {
			o.used-- // the List itself: its items count
		}
	case "NodePool":
		np := &v1.NodePool{}
		if err := decode(np); err != nil {
			return err
		}
		if err := checkRequirements("NodePool", np.Name, "spec.template.spec.requirements", np.Spec.Template.Spec.Requirements); err != nil {
			return err
		}
		if d := np.Spec.Disruption; d.ConsolidateAfter == "" && (d.ConsolidationPolicy != "" || len(d.Budgets) > 0) {
			return fmt.Errorf("NodePool %s: spec.disruption.consolidateAfter is required when disruption is given: add consolidateAfter: 0s to consolidate at once, or Never", np.Name)
		}
		applyNodePoolDefaults(np)
		o.NodePools = append(o.NodePools, np)
	case "NodeClaim":
		nc := &v1.NodeClaim{}
		if err := decode(nc); err != nil {
			return err
		}
		if err := checkRequirements("NodeClaim", nc.Name, "spec.requirements", nc.Spec.Requirements); err != nil {
			return err
		}
		o.NodeClaims = append(o.NodeClaims, nc)
	case "PersistentVolumeClaim":
		c := &corev1.PersistentVolumeClaim{}
		if err := decode(c); err != nil {
			return err
		}
		if c.Namespace == "" {
			c.Namespace = "default"
		}
		o.PVCs = append(o.PVCs, c)
	case "PersistentVolume":
		pv := &corev1.PersistentVolume{}
		if err := decode(pv); err != nil {
			return err
		}
		o.PVs = append(o.PVs, pv)
	case "StorageClass":
		sc := &storagev1.StorageClass{}
		if err := decode(sc); err != nil {
			return err
		}
		o.StorageClasses = append(o.StorageClasses, sc)
	case "CSINode":
		c := &storagev1.CSINode{}
		if err := decode(c); err != nil {
			return err
		}
		o.CSINodes = append(o.CSINodes, c)
	case "Namespace":
		ns := &corev1.Namespace{}
		if err := decode(ns); err != nil {
			return err
		}
		o.Namespaces = append(o.Namespaces, ns)
	case "NodeOverlay":
		ov := &v1alpha1.NodeOverlay{}
		if err := decode(ov); err != nil {
			return err
		}
		if err := checkOverlay(ov); err != nil {
			return err
		}
		o.Overlays = append(o.Overlays, ov)
	case "EC2NodeClass":
		nc := &awsv1.EC2NodeClass{}
		if err := decode(nc); err != nil {
			return err
		}
		o.EC2NodeClasses = append(o.EC2NodeClasses, nc)
	case "Pod":
		pod := &corev1.Pod{}
		if err := decode(pod); err != nil {
			return err
		}
		if err := checkPodSpec("Pod", pod.Name, "spec", &pod.Spec); err != nil {
			return err
		}
		o.Pods = append(o.Pods, defaultNamespace(pod))
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := decode(d); err != nil {
			return err
		}
		if err := checkPodSpec("Deployment", d.Name, "spec.template.spec", &d.Spec.Template.Spec); err != nil {
			return err
		}
		o.expand("apps/v1", "Deployment", d.ObjectMeta, d.Spec.Replicas, d.Spec.Template)
	case "StatefulSet":
		s := &appsv1.StatefulSet{}
		if err := decode(s); err != nil {
			return err
		}
		if err := checkPodSpec("StatefulSet", s.Name, "spec.template.spec", &s.Spec.Template.Spec); err != nil {
			return err
		}
		o.expand("apps/v1", "StatefulSet", s.ObjectMeta, s.Spec.Replicas, s.Spec.Template)
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		if err := decode(rs); err != nil {
			return err
		}
		if err := checkPodSpec("ReplicaSet", rs.Name, "spec.template.spec", &rs.Spec.Template.Spec); err != nil {
			return err
		}
		o.expand("apps/v1", "ReplicaSet", rs.ObjectMeta, rs.Spec.Replicas, rs.Spec.Template)
	case "Job":
		j := &batchv1.Job{}
		if err := decode(j); err != nil {
			return err
		}
		if err := checkPodSpec("Job", j.Name, "spec.template.spec", &j.Spec.Template.Spec); err != nil {
			return err
		}
		o.expand("batch/v1", "Job", j.ObjectMeta, j.Spec.Parallelism, j.Spec.Template)
	case "DaemonSet":
		ds := &appsv1.DaemonSet{}
		if err := decode(ds); err != nil {
			return err
		}
		o.DaemonSets = append(o.DaemonSets, ds)
	case "Node":
		n := &corev1.Node{}
		if err := decode(n); err != nil {
			return err
		}
		o.Nodes = append(o.Nodes, n)
	case "PodDisruptionBudget":
		pdb := &policyv1.PodDisruptionBudget{}
		if err := decode(pdb); err != nil {
			return err
		}
		if pdb.Namespace == "" {
			pdb.Namespace = "default"
		}
		o.PDBs = append(o.PDBs, pdb)
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err := decode(cm); err != nil {
			return err
		}
		if cm.Name == "aws-auth" && (cm.Namespace == "" || cm.Namespace == metav1.NamespaceSystem) {
			o.AWSAuth = cm
		} else {
			read = false
		}
	default:
		// Services and the like do not affect scheduling.
		read = false
	}
	return nil
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
		o.Pods = append(o.Pods, defaultNamespace(pod))
	}
}

// checkRequirements refuses what the API server would: an unknown
// operator, In without values, a comparison without one integer.
func checkRequirements(kind, name, field string, reqs []v1.NodeSelectorRequirementWithMinValues) error {
	for i, r := range reqs {
		if err := scheduling.ValidateOperator(r.Operator, r.Values); err != nil {
			return fmt.Errorf("%s %s: %s[%d] (key %s): %w", kind, name, field, i, r.Key, err)
		}
	}
	return nil
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
	return nil
}

// checkPodSpec refuses the node affinity Kubernetes would: an unknown
// operator (pods have no Gte or Lte), or values that do not fit it.
func checkPodSpec(kind, name, field string, spec *corev1.PodSpec) error {
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

// applyNodePoolDefaults fills what the API server would default.
func applyNodePoolDefaults(np *v1.NodePool) {
	if np.Spec.Template.Spec.ExpireAfter == "" {
		np.Spec.Template.Spec.ExpireAfter = "720h"
	}
	d := &np.Spec.Disruption
	if d.ConsolidateAfter == "" {
		d.ConsolidateAfter = "0s"
	}
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	}
	if len(d.Budgets) == 0 {
		d.Budgets = []v1.Budget{{Nodes: "10%"}}
	}
}
