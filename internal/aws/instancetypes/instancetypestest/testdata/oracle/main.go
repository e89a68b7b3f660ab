// Command instancetypes-oracle computes instance types with the reference's
// own code: DescribeInstanceTypes records and EC2NodeClass settings in, the
// requirements, capacity and overhead out (JSON lines).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/aws/karpenter-provider-aws/pkg/fake"
	"github.com/aws/karpenter-provider-aws/pkg/operator/options"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

type input struct {
	Info                    ec2types.InstanceTypeInfo `json:"info"`
	Region                  string                    `json:"region"`
	Zones                   []string                  `json:"zones"`
	ZoneInfo                []v1.ZoneInfo             `json:"zoneInfo"`
	AMIFamily               string                    `json:"amiFamily"`
	BlockDeviceMappings     []*v1.BlockDeviceMapping  `json:"blockDeviceMappings"`
	InstanceStorePolicy     *v1.InstanceStorePolicy   `json:"instanceStorePolicy"`
	MaxPods                 *int32                    `json:"maxPods"`
	PodsPerCore             *int32                    `json:"podsPerCore"`
	KubeReserved            map[string]string         `json:"kubeReserved"`
	SystemReserved          map[string]string         `json:"systemReserved"`
	EvictionHard            map[string]string         `json:"evictionHard"`
	EvictionSoft            map[string]string         `json:"evictionSoft"`
	VMMemoryOverheadPercent float64                   `json:"vmMemoryOverheadPercent"`
	ReservedENIs            int                       `json:"reservedENIs"`
	CapacityReservations    []v1.CapacityReservation  `json:"capacityReservations"`
	// Probes are NodePool requirements; the output says, for each, whether
	// the instance type's requirements intersect them, as the
	// provisioner's instance type filter asks.
	Probes [][]corev1.NodeSelectorRequirement `json:"probes"`
}

type requirement struct {
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

type output struct {
	Name              string                 `json:"name"`
	Requirements      map[string]requirement `json:"requirements"`
	Capacity          corev1.ResourceList    `json:"capacity"`
	KubeReserved      corev1.ResourceList    `json:"kubeReserved"`
	SystemReserved    corev1.ResourceList    `json:"systemReserved"`
	EvictionThreshold corev1.ResourceList    `json:"evictionThreshold"`
	Allocatable       corev1.ResourceList    `json:"allocatable"`
	Admitted          []bool                 `json:"admitted,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "fake-records" {
		// The DescribeInstanceTypes records the reference's own tests use.
		out, err := fake.NewEC2API().DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{})
		if err != nil {
			panic(err)
		}
		if err := json.NewEncoder(os.Stdout).Encode(out.InstanceTypes); err != nil {
			panic(err)
		}
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		ctx := options.ToContext(context.Background(), &options.Options{VMMemoryOverheadPercent: c.VMMemoryOverheadPercent, ReservedENIs: c.ReservedENIs})
		it := instancetype.NewInstanceType(ctx, c.Info, c.Region, c.Zones, c.ZoneInfo, c.BlockDeviceMappings, c.InstanceStorePolicy, nil,
			c.MaxPods, c.PodsPerCore, c.KubeReserved, c.SystemReserved, c.EvictionHard, c.EvictionSoft, c.AMIFamily, c.CapacityReservations)
		o := output{Name: it.Name, Requirements: map[string]requirement{}, Capacity: it.Capacity,
			KubeReserved: it.Overhead.KubeReserved, SystemReserved: it.Overhead.SystemReserved, EvictionThreshold: it.Overhead.EvictionThreshold,
			Allocatable: it.Allocatable()}
		for _, p := range c.Probes {
			o.Admitted = append(o.Admitted, it.Requirements.Intersects(scheduling.NewNodeSelectorRequirements(p...)) == nil)
		}
		for key, r := range it.Requirements {
			o.Requirements[key] = requirement{Operator: string(r.Operator()), Values: r.Values()}
		}
		if err := out.Encode(o); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}
