package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// ensureLaunchTemplate finds or creates the launch template for the
// content; its name is a hash of that content, so equal content shares one.
// A reservation id makes it launch into that capacity reservation.
func (p *Launcher) ensureLaunchTemplate(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, ami awsv1.AMI, opts templateOptions,
	kubelet *kubeletconfig.Config) (string, error) {
	data, err := p.launchTemplateData(claim, class, ami, opts, kubelet)
	if err != nil {
		return "", err
	}
	content, err := json.Marshal(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(content)
	name := "nodewright/" + p.cluster.Name + "/" + hex.EncodeToString(sum[:])[:20]
	if _, known := p.templates.Load(name); known {
		return name, nil
	}
	if _, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}}); err == nil {
		p.templates.Store(name, struct{}{})
		return name, nil
	} else if !hasCode(err, templateNotFound...) {
		return "", fmt.Errorf("finding launch template %s: %w", name, err)
	}
	if err := p.createLaunchTemplate(ctx, name, class, data); err != nil {
		return "", err
	}
	p.templates.Store(name, struct{}{})
	return name, nil
}

// createLaunchTemplate creates a launch template, tagged as the cluster's
// and the EC2NodeClass's; one made meanwhile by another launch is fine.
func (p *Launcher) createLaunchTemplate(ctx context.Context, name string, class *awsv1.EC2NodeClass, data *ec2types.RequestLaunchTemplateData) error {
	// The reference finds an EC2NodeClass's templates by eks:eks-cluster-name
	// and the class: with it, going back to the reference deletes these too.
	tags := []ec2types.Tag{
		{Key: aws.String(p.clusterTag()), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String(p.cluster.Name)},
		{Key: aws.String(awsv1.LabelEC2NodeClass), Value: aws.String(class.Name)},
	}
	_, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name), LaunchTemplateData: data,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	})
	if err != nil && !hasCode(err, "InvalidLaunchTemplateName.AlreadyExistsException") {
		return fmt.Errorf("creating launch template %s: %w", name, err)
	}
	return nil
}

// launchTemplateData is what a launch template holds: the AMI, the user
// data for the pod limit, the instance profile, network interfaces,
// placement, the capacity reservation if any, and the EC2NodeClass's
// monitoring, CPU, Nitro Enclaves, metadata and volume settings.
func (p *Launcher) launchTemplateData(claim *v1.NodeClaim, class *awsv1.EC2NodeClass, ami awsv1.AMI, opts templateOptions,
	kubelet *kubeletconfig.Config) (*ec2types.RequestLaunchTemplateData, error) {
	ud, err := LaunchUserData(p.cluster, claim, class, opts.maxPods, kubelet)
	if err != nil {
		return nil, err
	}
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(ami.ID),
		UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(ud))),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(class.Status.InstanceProfile)},
		Monitoring:         &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(aws.ToBool(class.Spec.DetailedMonitoring))},
	}
	data.NetworkInterfaces = networkInterfaces(class, opts.efa)
	data.CpuOptions = cpuOptions(class)
	if o := class.Spec.EnclaveOptions; o != nil && o.Enabled {
		data.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(true)}
	}
	data.Placement = placement(claim, class)
	data.CapacityReservationSpecification = reservationTarget(opts.reservation)
	data.MetadataOptions = metadataOptions(class)
	data.BlockDeviceMappings = blockDeviceMappings(class)
	return data, nil
}

// cpuOptions are the EC2NodeClass's CPU options, nil when it sets none.
func cpuOptions(class *awsv1.EC2NodeClass) *ec2types.LaunchTemplateCpuOptionsRequest {
	o := class.Spec.CPUOptions
	if o == nil || o.NestedVirtualization == nil {
		return nil
	}
	return &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*o.NestedVirtualization)}
}

// reservationTarget launches into a capacity reservation; nil for none.
func reservationTarget(reservation string) *ec2types.LaunchTemplateCapacityReservationSpecificationRequest {
	if reservation == "" {
		return nil
	}
	return &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(reservation)},
	}
}

// metadataOptions are the EC2NodeClass's instance metadata settings, nil
// when it sets none.
func metadataOptions(class *awsv1.EC2NodeClass) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	m := class.Spec.MetadataOptions
	if m == nil {
		return nil
	}
	return &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(aws.ToString(m.HTTPEndpoint)),
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(aws.ToString(m.HTTPProtocolIPv6)),
		HttpPutResponseHopLimit: aws.Int32(int32(aws.ToInt64(m.HTTPPutResponseHopLimit))), //nolint:gosec // at most 64
		HttpTokens:              ec2types.LaunchTemplateHttpTokensState(aws.ToString(m.HTTPTokens)),
	}
}

// blockDeviceMappings are the EC2NodeClass's EBS volumes, or its AMI
// family's defaults when it lists none (encrypted gp3: a 20Gi root volume,
// Bottlerocket's root and data volumes, Windows's 50Gi root; a Custom AMI
// its own); mappings without a volume are left out.
func blockDeviceMappings(class *awsv1.EC2NodeClass) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, bdm := range instancetypes.BlockDeviceMappingsOf(class) {
		if bdm == nil || bdm.EBS == nil {
			continue
		}
		out = append(out, ec2types.LaunchTemplateBlockDeviceMappingRequest{
			DeviceName: bdm.DeviceName,
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: instancetypes.VolumeGiB(bdm.EBS.VolumeSize), VolumeType: ec2types.VolumeType(aws.ToString(bdm.EBS.VolumeType)),
				Encrypted: bdm.EBS.Encrypted, DeleteOnTermination: bdm.EBS.DeleteOnTermination, KmsKeyId: bdm.EBS.KMSKeyID,
				SnapshotId: bdm.EBS.SnapshotID, Iops: int32Of(bdm.EBS.IOPS), Throughput: int32Of(bdm.EBS.Throughput),
				VolumeInitializationRate: bdm.EBS.VolumeInitializationRate,
			},
		})
	}
	return out
}

// templateOptions are what a launch template holds beyond the EC2NodeClass
// and the NodeClaim: the pod limit (in the user data), the capacity
// reservation launched into, and how many EFA interfaces to attach.
type templateOptions struct {
	maxPods     int64
	reservation string
	efa         int64
}

// networkInterfaces are the interfaces a node launches with: those of
// spec.networkInterfaces, else the primary one; each in the EC2NodeClass's
// security groups, and all but EFA-only ones with its IP prefixes, public
// IP setting and connection tracking timeouts.
func networkInterfaces(class *awsv1.EC2NodeClass, efa int64) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	groups := make([]string, 0, len(class.Status.SecurityGroups))
	for _, g := range class.Status.SecurityGroups {
		groups = append(groups, g.ID)
	}
	var tracking *ec2types.ConnectionTrackingSpecificationRequest
	if ct := class.Spec.ConnectionTracking; ct != nil {
		tracking = &ec2types.ConnectionTrackingSpecificationRequest{
			TcpEstablishedTimeout: ct.TCPEstablishedTimeout, UdpStreamTimeout: ct.UDPStreamTimeout, UdpTimeout: ct.UDPTimeout,
		}
	}
	nics := class.Spec.NetworkInterfaces
	if len(nics) == 0 && efa > 0 {
		return efaInterfaces(efa, groups, class, tracking)
	}
	if len(nics) == 0 {
		nics = []*awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
	}
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, 0, len(nics))
	for _, ni := range nics {
		spec := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex), Groups: groups,
		}
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			spec.InterfaceType = aws.String(string(ec2types.NetworkInterfaceTypeEfaOnly))
		} else {
			if len(class.Spec.NetworkInterfaces) > 0 {
				spec.InterfaceType = aws.String(string(ec2types.NetworkInterfaceTypeInterface))
			}
			spec.Ipv4PrefixCount, spec.AssociatePublicIpAddress, spec.ConnectionTrackingSpecification = class.Spec.IPPrefixCount, class.Spec.AssociatePublicIPAddress, tracking
		}
		out = append(out, spec)
	}
	return out
}

// efaInterfaces are n EFA interfaces (each with an ENA device too), one
// per network card; the first card's at device index 0 is the primary
// interface, the others at 1.
func efaInterfaces(n int64, groups []string, class *awsv1.EC2NodeClass, tracking *ec2types.ConnectionTrackingSpecificationRequest) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, 0, n)
	for i := range int32(n) { //nolint:gosec // at most the type's EFA interfaces
		device := int32(1)
		if i == 0 {
			device = 0
		}
		out = append(out, ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(i), DeviceIndex: aws.Int32(device), Groups: groups,
			InterfaceType: aws.String(string(ec2types.NetworkInterfaceTypeEfa)), Ipv4PrefixCount: class.Spec.IPPrefixCount,
			AssociatePublicIpAddress: class.Spec.AssociatePublicIPAddress, ConnectionTrackingSpecification: tracking,
		})
	}
	return out
}

// placement puts a node in the EC2NodeClass's placement group, and in a
// partition group in the partition its NodeClaim requires, if just one.
func placement(claim *v1.NodeClaim, class *awsv1.EC2NodeClass) *ec2types.LaunchTemplatePlacementRequest {
	pg := class.Status.PlacementGroup
	if pg == nil || class.Spec.PlacementGroupSelector == nil {
		return nil
	}
	p := &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg.ID)}
	for _, r := range claim.Spec.Requirements {
		if r.Key == awsv1.LabelPlacementGroupPartition && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			if n, err := strconv.ParseInt(r.Values[0], 10, 32); err == nil {
				p.PartitionNumber = aws.Int32(int32(n))
			}
		}
	}
	return p
}

// LaunchUserData is the user data (not base64-encoded) an instance of a
// NodeClaim is launched with when its instance type allows maxPods pods:
// the NodeClaim's labels (its NodePool and the template's labels; the
// instance type's labels come from the kubelet and nodewright), its
// taints and startup taints, the EC2NodeClass's kubelet settings (kubelet,
// when given: those evaluated for the instance type), merged with the
// EC2NodeClass's userData.
func LaunchUserData(cluster userdata.Cluster, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, maxPods int64, kubelet *kubeletconfig.Config) (string, error) {
	labels := map[string]string{}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	user := ""
	if class.Spec.UserData != nil {
		user = *class.Spec.UserData
	}
	if kubelet == nil {
		parsed, err := kubeletconfig.Parse(class.Spec.Kubelet)
		if err != nil {
			return "", fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
		}
		kubelet = parsed
	}
	node := userdata.Node{
		Labels: labels, Taints: append(append([]corev1.Taint(nil), claim.Spec.Taints...), claim.Spec.StartupTaints...),
		MaxPods: int32(maxPods), Kubelet: kubelet, KubeletFields: kubeletconfig.Fields(class.Spec.Kubelet), //nolint:gosec // pod limits are small
	}
	return userdata.Generate(nodeclass.Family(class), cluster, node, user)
}

func int32Of(v *int64) *int32 {
	if v == nil {
		return nil
	}
	return aws.Int32(int32(*v)) //nolint:gosec // validated ranges
}

func hasCode(err error, codes ...string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && slices.Contains(codes, apiErr.ErrorCode())
}

// templateNotFound are EC2's codes for a launch template that does not exist.
var templateNotFound = []string{"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
