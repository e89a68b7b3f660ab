package state

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// maxDeviceFields is how many attributes and capacities together a
// device may have, as in a ResourceSlice.
const maxDeviceFields = 32

// ValidateOverlayDevices checks an overlay's dynamicResources as the API
// checks a ResourceSlice, and what the CRD cannot: names unique, each
// attribute one value, bindings naming devices the templates have. The
// error names the field and the fix.
func ValidateOverlayDevices(spec v1alpha1.NodeOverlaySpec) error {
	dr := spec.DynamicResources
	if dr == nil {
		return nil
	}
	errs := offeringRequirements(spec.Requirements)
	templates := map[string]*v1alpha1.ResourceSliceTemplate{}
	drivers := map[string]bool{}
	for i := range dr.ResourceSliceTemplates {
		t := &dr.ResourceSliceTemplates[i]
		path := fmt.Sprintf("spec.dynamicResources.resourceSliceTemplates[%d]", i)
		if drivers[t.Spec.Driver] {
			errs = append(errs, fmt.Errorf("%s.spec.driver %q: another template has this driver; put a driver's devices in one template", path, t.Spec.Driver))
		}
		drivers[t.Spec.Driver] = true
		if msgs := validation.IsDNS1123Subdomain(t.Spec.Driver); len(msgs) > 0 || len(t.Spec.Driver) > 63 {
			errs = append(errs, fmt.Errorf("%s.spec.driver %q: use the driver's name, a DNS subdomain of at most 63 characters such as gpu.example.com", path, t.Spec.Driver))
		}
		if t.Metadata.Name != "" {
			if templates[t.Metadata.Name] != nil {
				errs = append(errs, fmt.Errorf("%s.metadata.name %q: another template has this name; name each template once", path, t.Metadata.Name))
			}
			templates[t.Metadata.Name] = t
		}
		if len(t.Spec.Devices) == 0 {
			errs = append(errs, fmt.Errorf("%s.spec.devices: list the devices the driver publishes on a node", path))
		}
		names := map[string]bool{}
		for j := range t.Spec.Devices {
			d := &t.Spec.Devices[j]
			dpath := fmt.Sprintf("%s.spec.devices[%d]", path, j)
			if names[d.Name] {
				errs = append(errs, fmt.Errorf("%s.name %q: another device of the template has this name; name each device once", dpath, d.Name))
			}
			names[d.Name] = true
			errs = append(errs, validateTemplateDevice(dpath, d)...)
		}
	}
	errs = append(errs, bindingErrors(dr.AttributeBindings, templates)...)
	return errors.Join(errs...)
}

// offeringRequirements refuses the requirements that select offerings
// rather than instance types.
func offeringRequirements(reqs []v1alpha1.NodeSelectorRequirement) []error {
	var errs []error
	for i, r := range reqs {
		if r.Key == scheduling.LabelZone || r.Key == v1.LabelCapacityType {
			errs = append(errs, fmt.Errorf("spec.requirements[%d] (key %s): devices belong to an instance type, not to a zone or capacity type; "+
				"select instance types only in an overlay with dynamicResources (put the price or capacity in another overlay)", i, r.Key))
		}
	}
	return errs
}

// bindingErrors checks that bindings name attributes as matchAttribute
// does and devices the templates have.
func bindingErrors(bindings []v1alpha1.AttributeBinding, templates map[string]*v1alpha1.ResourceSliceTemplate) []error {
	var errs []error
	for i, b := range bindings {
		path := fmt.Sprintf("spec.dynamicResources.attributeBindings[%d]", i)
		for _, a := range b.Attributes {
			if domain, id, ok := strings.Cut(string(a), "/"); !ok || len(validation.IsDNS1123Subdomain(domain)) > 0 || !isCIdentifier(id) {
				errs = append(errs, fmt.Errorf("%s.attributes %q: name the attribute with its domain, as matchAttribute does, such as resource.kubernetes.io/pcieRoot", path, a))
			}
		}
		for j, sel := range b.DeviceSelectors {
			t := templates[sel.ResourceSliceTemplate]
			switch {
			case t == nil:
				errs = append(errs, fmt.Errorf("%s.deviceSelectors[%d].resourceSliceTemplate %q: no template has this metadata.name; name the template or fix the reference", path, j, sel.ResourceSliceTemplate))
			case !slices.ContainsFunc(t.Spec.Devices, func(d v1alpha1.TemplateDevice) bool { return d.Name == sel.Device }):
				errs = append(errs, fmt.Errorf("%s.deviceSelectors[%d].device %q: template %q has no such device", path, j, sel.Device, sel.ResourceSliceTemplate))
			}
		}
	}
	return errs
}

func validateTemplateDevice(path string, d *v1alpha1.TemplateDevice) []error {
	var errs []error
	if len(d.Attributes)+len(d.Capacity) > maxDeviceFields {
		errs = append(errs, fmt.Errorf("%s: %d attributes and capacities; a device has at most %d", path, len(d.Attributes)+len(d.Capacity), maxDeviceFields))
	}
	for _, name := range slices.Sorted(maps.Keys(d.Attributes)) {
		if !validQualifiedName(string(name)) {
			errs = append(errs, fmt.Errorf("%s.attributes %q: use a name such as productName or example.com/productName", path, name))
		}
		a := d.Attributes[name]
		set := 0
		for _, v := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil} {
			if v {
				set++
			}
		}
		if set != 1 {
			errs = append(errs, fmt.Errorf("%s.attributes[%s]: give exactly one of int, bool, string or version", path, name))
		}
		if a.VersionValue != nil {
			if _, err := semver.Parse(*a.VersionValue); err != nil {
				errs = append(errs, fmt.Errorf("%s.attributes[%s].version %q: use a semantic version such as 1.2.3", path, name, *a.VersionValue))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Capacity)) {
		if !validQualifiedName(string(name)) {
			errs = append(errs, fmt.Errorf("%s.capacity %q: use a name such as memory or example.com/memory", path, name))
		}
	}
	return errs
}

// validQualifiedName is a device attribute or capacity name: a C
// identifier of at most 32 characters, optionally after a DNS subdomain
// and a slash.
func validQualifiedName(name string) bool {
	domain, id, qualified := strings.Cut(name, "/")
	if !qualified {
		id = domain
	} else if len(validation.IsDNS1123Subdomain(domain)) > 0 || len(domain) > 63 {
		return false
	}
	return isCIdentifier(id) && len(id) <= 32
}

func isCIdentifier(s string) bool {
	return len(validation.IsCIdentifier(s)) == 0
}

// overlayDeviceEffects records what is wrong with an overlay's
// dynamicResources, and the drivers whose devices the scheduler cannot
// count (more drivers the catalog does not know than it has room for).
func overlayDeviceEffects(o *v1alpha1.NodeOverlay, e *OverlayEffect) {
	if o.Spec.DynamicResources == nil {
		return
	}
	if err := ValidateOverlayDevices(o.Spec); err != nil {
		e.InvalidDevices = err.Error()
		return
	}
	for _, t := range o.Spec.DynamicResources.ResourceSliceTemplates {
		name := "devices of " + t.Spec.Driver
		if !scheduling.BindDriver(t.Spec.Driver) && !slices.Contains(e.Unsupported, name) {
			e.Unsupported = append(e.Unsupported, name)
		}
	}
}

// bindOverlayDrivers has the scheduler count the devices of the drivers
// valid overlays declare, in the overlays' precedence.
func bindOverlayDrivers(overlays []*v1alpha1.NodeOverlay) {
	for _, ov := range SortOverlays(overlays) {
		if ov.Spec.DynamicResources == nil || ValidateOverlayDevices(ov.Spec) != nil {
			continue
		}
		for _, t := range ov.Spec.DynamicResources.ResourceSliceTemplates {
			scheduling.BindDriver(t.Spec.Driver)
		}
	}
}

// devices sets, per driver, the devices the heaviest overlay matching
// one of the type's offerings declares, in place of the catalog's;
// overlays of the same weight that declare a driver's devices otherwise
// conflict.
func (o *overlaying) devices() {
	declared := map[string]int{} // driver → overlay
	for i, ov := range o.overlays {
		dr := ov.Spec.DynamicResources
		if dr == nil || o.effects[ov.Name].InvalidDevices != "" || !slices.ContainsFunc(o.it.Offerings, func(off scheduling.Offering) bool { return matches(o.reqs[i], o.it, o.poolLabels, &off) }) {
			continue
		}
		for ti := range dr.ResourceSliceTemplates {
			t := &dr.ResourceSliceTemplates[ti]
			if !scheduling.CountsDevicesOf(t.Spec.Driver) {
				continue // named on the overlay: the scheduler could not tell when a node's devices are taken
			}
			if prev, seen := declared[t.Spec.Driver]; seen {
				if weight(o.overlays[prev]) == weight(ov) && !reflect.DeepEqual(templateOf(o.overlays[prev], t.Spec.Driver).Spec.Devices, t.Spec.Devices) {
					conflict(o.effects, ov.Name, o.overlays[prev].Name, o.it.Name, "the devices of "+t.Spec.Driver)
				}
				continue
			}
			declared[t.Spec.Driver] = i
			c := o.copyOnce()
			set := scheduling.DeviceSet{Driver: t.Spec.Driver, Devices: templateDevices(ov, t)}
			if at := slices.IndexFunc(c.Devices, func(s scheduling.DeviceSet) bool { return s.Driver == t.Spec.Driver }); at >= 0 {
				set.OnRequest = c.Devices[at].OnRequest // declared otherwise, attached as before
				had := -int64(len(c.Devices[at].Devices))
				c.Capacity, c.Allocatable = c.Capacity.AddDevices(set.Driver, had), c.Allocatable.AddDevices(set.Driver, had)
				c.Devices = slices.Clone(c.Devices)
				c.Devices[at] = set
			} else {
				c.Devices = append(slices.Clip(c.Devices), set)
			}
			n := int64(len(set.Devices))
			c.Capacity, c.Allocatable = c.Capacity.AddDevices(set.Driver, n), c.Allocatable.AddDevices(set.Driver, n)
			o.touched[ov.Name] = true
		}
	}
}

func templateOf(ov *v1alpha1.NodeOverlay, driver string) *v1alpha1.ResourceSliceTemplate {
	for i := range ov.Spec.DynamicResources.ResourceSliceTemplates {
		if t := &ov.Spec.DynamicResources.ResourceSliceTemplates[i]; t.Spec.Driver == driver {
			return t
		}
	}
	return nil
}

// templateDevices are a template's devices as the driver would publish
// them; an attribute a binding names and the device does not set gets a
// value shared by the binding's devices and no other, as the node will
// have.
func templateDevices(ov *v1alpha1.NodeOverlay, t *v1alpha1.ResourceSliceTemplate) []resourcev1.Device {
	out := make([]resourcev1.Device, 0, len(t.Spec.Devices))
	for _, d := range t.Spec.Devices {
		dev := resourcev1.Device{Name: d.Name, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}}
		for k, v := range d.Attributes {
			dev.Attributes[k] = *v.DeepCopy()
		}
		if len(d.Capacity) > 0 {
			dev.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{}
			for k, v := range d.Capacity {
				dev.Capacity[k] = resourcev1.DeviceCapacity{Value: v.Value.DeepCopy()}
			}
		}
		for bi, b := range ov.Spec.DynamicResources.AttributeBindings {
			if !slices.Contains(b.DeviceSelectors, v1alpha1.DeviceSelector{ResourceSliceTemplate: t.Metadata.Name, Device: d.Name}) || t.Metadata.Name == "" {
				continue
			}
			for _, a := range b.Attributes {
				if !hasAttribute(dev, t.Spec.Driver, a) {
					dev.Attributes[resourcev1.QualifiedName(a)] = resourcev1.DeviceAttribute{StringValue: ptrTo(fmt.Sprintf("bound-%s-%d", ov.Name, bi))}
				}
			}
		}
		out = append(out, dev)
	}
	return out
}

// hasAttribute reports whether a device sets an attribute, by its full
// name or, in the driver's own domain, its short one.
func hasAttribute(d resourcev1.Device, driver string, name resourcev1.FullyQualifiedName) bool {
	if _, ok := d.Attributes[resourcev1.QualifiedName(name)]; ok {
		return true
	}
	domain, id, _ := strings.Cut(string(name), "/")
	_, ok := d.Attributes[resourcev1.QualifiedName(id)]
	return ok && domain == driver
}

// OverlaidDevices are the devices a node's drivers publish as the
// overlays declare them, for a node by its labels (instance type,
// NodePool, zone, capacity type and the rest), on top of the catalog's.
func OverlaidDevices(labels map[string]string, catalog []scheduling.DeviceSet, overlays Overlays) []scheduling.DeviceSet {
	it := &scheduling.InstanceType{Name: labels[corev1.LabelInstanceTypeStable], Devices: catalog,
		Offerings: []scheduling.Offering{{Zone: labels[corev1.LabelTopologyZone], CapacityType: labels[v1.LabelCapacityType]}}}
	reqs := make([]scheduling.Requirements, len(overlays))
	effects := map[string]*OverlayEffect{}
	for i, ov := range overlays {
		reqs[i] = overlayRequirements(ov)
		effects[ov.Name] = &OverlayEffect{}
		overlayDeviceEffects(ov, effects[ov.Name])
	}
	o := &overlaying{it: it, poolLabels: labels, overlays: overlays, reqs: reqs, effects: effects, touched: map[string]bool{}}
	o.devices()
	if o.changed == nil {
		return catalog
	}
	return o.changed.Devices
}
