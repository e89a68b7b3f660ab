package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The reference's KWOK provider reads its instance types from a JSON file
// (--instance-types-file-path): per type its name, architecture, operating
// systems, resources (its capacity) and offerings (price, zone and capacity
// type as requirements). It gives every type kube-reserved of 100m CPU and
// 10Mi memory and nothing else, so a type's resources here are
// nodewright's allocatable plus that: both autoscalers then see the same
// room for pods on every type, at the same prices, in the same zones.
var referenceKubeReserved = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("10Mi"),
}

// kwokType is one instance type of the KWOK provider's file.
type kwokType struct {
	Name             string              `json:"name"`
	Offerings        []kwokOffering      `json:"offerings"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []corev1.OSName     `json:"operatingSystems"`
	Resources        corev1.ResourceList `json:"resources"`
}

type kwokOffering struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// kwokCatalog converts nodewright's catalog to the KWOK provider's file:
// every type with an available spot or on-demand offering, Linux.
func kwokCatalog(types []*scheduling.InstanceType) ([]byte, error) {
	out := make([]kwokType, 0, len(types))
	for _, it := range types {
		arch, ok := it.Requirements[corev1.LabelArchStable].Single()
		if !ok {
			return nil, fmt.Errorf("%s: no single architecture", it.Name)
		}
		kt := kwokType{Name: it.Name, Architecture: arch, OperatingSystems: []corev1.OSName{corev1.Linux}, Resources: it.Allocatable.List()}
		for name, q := range referenceKubeReserved {
			sum := kt.Resources[name]
			sum.Add(q)
			kt.Resources[name] = sum
		}
		for _, o := range it.Offerings {
			if !o.Available || (o.CapacityType != v1.CapacityTypeSpot && o.CapacityType != v1.CapacityTypeOnDemand) {
				continue
			}
			kt.Offerings = append(kt.Offerings, kwokOffering{Price: o.Price, Available: true, Requirements: []corev1.NodeSelectorRequirement{
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{o.CapacityType}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{o.Zone}},
			}})
		}
		if len(kt.Offerings) > 0 {
			out = append(out, kt)
		}
	}
	slices.SortFunc(out, func(a, b kwokType) int { return cmp.Compare(a.Name, b.Name) })
	return json.MarshalIndent(out, "", " ")
}

// priceOf is a catalog's price of an instance type's offering.
type priceOf map[[3]string]float64

func prices(types []*scheduling.InstanceType) priceOf {
	p := priceOf{}
	for _, it := range types {
		for _, o := range it.Offerings {
			p[[3]string{it.Name, o.CapacityType, o.Zone}] = o.Price
		}
	}
	return p
}
