package instancetypes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/utils/clock"

	"github.com/nodewright/nodewright/internal/scheduling"
)

type ec2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, opts ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

type pricingAPI interface {
	GetProducts(ctx context.Context, in *pricing.GetProductsInput, opts ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// Provider reads a region's instance types, zones and prices from the EC2
// and Pricing APIs, and keeps the last prices they answered.
type Provider struct {
	EC2     ec2API
	Pricing pricingAPI
	Region  string
	Clock   clock.PassiveClock
	// IsolatedVPC: the Pricing API cannot be reached (it has no VPC
	// endpoint), so on-demand prices are the built-in table's
	// (--isolated-vpc).
	IsolatedVPC bool

	mu                     sync.Mutex
	lastOnDemand, lastSpot map[string]float64
	status                 PriceStatus
}

// InstanceTypes returns the region's instance types offered in the zones
// of opts, priced on-demand (Pricing API) and spot (current spot price
// history); types without an on-demand price have no offerings.
func (p *Provider) InstanceTypes(ctx context.Context, opts Options) ([]*scheduling.InstanceType, error) {
	specs, err := p.Specs(ctx)
	if err != nil {
		return nil, err
	}
	return InstanceTypes(specs, opts), nil
}

// Specs reads the instance types with their offerings and prices. Prices
// never stop it: when the Pricing API or the spot price history cannot be
// read, the last answer is used, and before any answer the built-in
// on-demand table (spot priced as on-demand); Prices says which.
func (p *Provider) Specs(ctx context.Context) ([]Spec, error) {
	zones, err := p.offeredZones(ctx)
	if err != nil {
		return nil, err
	}
	onDemand, err := p.currentOnDemand(ctx)
	if err != nil {
		return nil, err
	}
	spot := p.currentSpot(ctx, onDemand)
	var specs []Spec
	pages := ec2.NewDescribeInstanceTypesPaginator(p.EC2, &ec2.DescribeInstanceTypesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types: %w", err)
		}
		for _, info := range page.InstanceTypes {
			s := specOf(info)
			s.OnDemand = onDemand[s.Name]
			s.Offered = map[string]float64{}
			for _, zone := range zones[s.Name] {
				s.Offered[zone] = spot(s.Name, zone)
			}
			specs = append(specs, s)
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs, nil
}

// PriceReadTimeout bounds a read of the prices (with the SDK's retries);
// past it, the last answer or the built-in table serves.
const PriceReadTimeout = 15 * time.Second

// Prices says where the prices of the last Specs came from.
func (p *Provider) Prices() PriceStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

func (p *Provider) now() time.Time {
	if p.Clock == nil {
		return time.Now()
	}
	return p.Clock.Now()
}

// readPrices reads prices with fetch, bounded by PriceReadTimeout (an
// endpoint that drops the connection must not hold launches up), and
// records where the prices come from in st: the answer (kept in *last),
// else the last answer; none is nil, and st then says the built-in
// fallback serves.
func (p *Provider) readPrices(ctx context.Context, fetch func(context.Context) (map[string]float64, error), last *map[string]float64, st *PriceState) (map[string]float64, error) {
	readCtx, cancel := context.WithTimeout(ctx, PriceReadTimeout)
	prices, err := fetch(readCtx)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	switch {
	case err == nil:
		*last = prices
		st.set(PricesFromAPI, now, nil)
		st.Published, st.TableRegion = "", ""
		return prices, nil
	case *last != nil:
		st.set(PricesLastKnown, now, err)
		return *last, err
	}
	st.set(PricesBuiltIn, now, err)
	return nil, err
}

// currentOnDemand reads the on-demand prices, falling back to the last
// answer, then to the built-in table.
func (p *Provider) currentOnDemand(ctx context.Context) (map[string]float64, error) {
	var prices map[string]float64
	var err error
	if p.IsolatedVPC {
		// The Pricing API has no VPC endpoint: the built-in table it is.
		p.mu.Lock()
		p.status.OnDemand.set(PricesBuiltIn, p.now(), nil)
		p.mu.Unlock()
	} else if prices, err = p.readPrices(ctx, p.onDemandPrices, &p.lastOnDemand, &p.status.OnDemand); prices != nil {
		return prices, nil
	}
	table, region, terr := BuiltInPrices(p.Region)
	if terr != nil {
		return nil, errors.Join(err, terr)
	}
	p.mu.Lock()
	p.status.OnDemand.Published, p.status.OnDemand.TableRegion = table.Published, region
	p.mu.Unlock()
	return table.OnDemand, nil
}

// currentSpot reads the spot prices, falling back to the last answer, then
// to the on-demand prices: spot is then never assumed cheaper than it is.
func (p *Provider) currentSpot(ctx context.Context, onDemand map[string]float64) func(instanceType, zone string) float64 {
	prices, _ := p.readPrices(ctx, p.spotPrices, &p.lastSpot, &p.status.Spot) // the status keeps the error
	if prices == nil {
		return func(instanceType, _ string) float64 { return onDemand[instanceType] }
	}
	return func(instanceType, zone string) float64 { return prices[instanceType+"/"+zone] }
}

// specOf is the catalog entry of an instance type EC2 describes.
func specOf(info ec2types.InstanceTypeInfo) Spec {
	s := Spec{Name: string(info.InstanceType), BareMetal: aws.ToBool(info.BareMetal), Hypervisor: string(info.Hypervisor), Info: &info,
		NitroEnclaves: info.NitroEnclavesSupport == ec2types.NitroEnclavesSupportSupported}
	if info.VCpuInfo != nil {
		s.VCPU = int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		s.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if p := info.ProcessorInfo; p != nil {
		s.Arch = archOf(p.SupportedArchitectures)
		s.NestedVirtualization = slices.Contains(p.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization)
	}
	s.NetworkCards = 1
	if info.NetworkInfo != nil {
		setNetwork(&s, info.NetworkInfo)
	}
	s.PlacementStrategies = strategiesOf(info.PlacementGroupInfo)
	s.GPU = gpuCount(info.GpuInfo)
	s.Accelerators = acceleratorsOf(info)
	return s
}

// acceleratorsOf is what EC2 says of a type's GPUs (the first model) and
// Neuron devices.
func acceleratorsOf(info ec2types.InstanceTypeInfo) Accelerators {
	var a Accelerators
	if gi := info.GpuInfo; gi != nil && len(gi.Gpus) > 0 {
		g := gi.Gpus[0]
		a.GPUName, a.GPUManufacturer = aws.ToString(g.Name), aws.ToString(g.Manufacturer)
		if g.MemoryInfo != nil {
			a.GPUMemoryMiB = int64(aws.ToInt32(g.MemoryInfo.SizeInMiB))
		}
	}
	if ni := info.NeuronInfo; ni != nil {
		for _, d := range ni.NeuronDevices {
			a.NeuronName = aws.ToString(d.Name)
			a.NeuronDevices += int64(aws.ToInt32(d.Count))
		}
	}
	return a
}

// archOf is the Kubernetes architecture of the first architecture a type
// supports, "" when it lists none.
func archOf(archs []ec2types.ArchitectureType) string {
	if len(archs) == 0 {
		return ""
	}
	if archs[0] == ec2types.ArchitectureTypeArm64 {
		return "arm64"
	}
	return "amd64"
}

// setNetwork sets a spec's network interfaces, cards and EFA interfaces.
func setNetwork(s *Spec, ni *ec2types.NetworkInfo) {
	s.MaxENIs = int64(aws.ToInt32(ni.MaximumNetworkInterfaces))
	s.IPv4PerENI = int64(aws.ToInt32(ni.Ipv4AddressesPerInterface))
	s.NetworkCards = max(1, int64(aws.ToInt32(ni.MaximumNetworkCards)))
	if efa := ni.EfaInfo; efa != nil { // as the reference reads it, whatever EfaSupported says
		s.MaxEFA = int64(aws.ToInt32(efa.MaximumEfaInterfaces))
	}
}

// strategiesOf are the placement strategies a type supports.
func strategiesOf(info *ec2types.PlacementGroupInfo) []string {
	if info == nil {
		return nil
	}
	var out []string
	for _, st := range info.SupportedStrategies {
		out = append(out, string(st))
	}
	return out
}

// gpuCount is how many GPUs a type has.
func gpuCount(info *ec2types.GpuInfo) int64 {
	if info == nil {
		return 0
	}
	n := int64(0)
	for _, g := range info.Gpus {
		n += int64(aws.ToInt32(g.Count))
	}
	return n
}

func (p *Provider) offeredZones(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.EC2, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			out[string(o.InstanceType)] = append(out[string(o.InstanceType)], aws.ToString(o.Location))
		}
	}
	return out, nil
}

// spotPrices returns the latest Linux spot price per "type/zone".
func (p *Provider) spotPrices(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	latest := map[string]int64{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.EC2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{string(ec2types.RIProductDescriptionLinuxUnix)},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing spot prices: %w", err)
		}
		for _, sp := range page.SpotPriceHistory {
			key := string(sp.InstanceType) + "/" + aws.ToString(sp.AvailabilityZone)
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || math.IsNaN(price) || math.IsInf(price, 0) || price < 0 {
				continue
			}
			if ts := aws.ToTime(sp.Timestamp).Unix(); ts >= latest[key] {
				latest[key], out[key] = ts, price
			}
		}
	}
	return out, nil
}

func (p *Provider) onDemandPrices(ctx context.Context) (map[string]float64, error) {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Value: aws.String(value), Type: pricingtypes.FilterTypeTermMatch}
	}
	out := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(p.Pricing, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			filter("regionCode", p.Region), filter("operatingSystem", "Linux"), filter("tenancy", "Shared"),
			filter("preInstalledSw", "NA"), filter("capacitystatus", "Used"),
		},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading on-demand prices: %w", err)
		}
		for _, raw := range page.PriceList {
			e, err := ParsePriceListEntry(raw)
			if err != nil {
				return nil, err
			}
			if e.USDPerHour > 0 {
				out[e.InstanceType] = e.USDPerHour
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("reading on-demand prices: the Pricing API has no Linux on-demand price for region %s", p.Region)
	}
	return out, nil
}
