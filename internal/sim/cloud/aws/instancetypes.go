package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// specs are the account's instance types: the embedded catalog.
func (a *Account) specs() ([]instancetypes.Spec, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.catalog == nil {
		specs, err := instancetypes.Catalog()
		if err != nil {
			return nil, err
		}
		a.catalog = specs
	}
	return a.catalog, nil
}

// DescribeInstanceTypes describes the catalog's instance types (all of
// them, or those named), in one page.
func (e *EC2) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeInstanceTypes")); err != nil {
		return nil, err
	}
	specs, err := e.account.specs()
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstanceTypesOutput{}
	for _, s := range specs {
		if len(in.InstanceTypes) > 0 && !containsType(in.InstanceTypes, s.Name) {
			continue
		}
		out.InstanceTypes = append(out.InstanceTypes, s.Record())
	}
	return out, nil
}

func containsType(list []ec2types.InstanceType, name string) bool {
	for _, t := range list {
		if string(t) == name {
			return true
		}
	}
	return false
}

// DescribeInstanceTypeOfferings lists the priced instance types in every
// zone (location type availability-zone).
func (e *EC2) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeInstanceTypeOfferings")); err != nil {
		return nil, err
	}
	if in.LocationType != "" && in.LocationType != ec2types.LocationTypeAvailabilityZone {
		return nil, apiError("InvalidParameterValue", "the simulated account lists offerings by availability-zone only")
	}
	specs, err := e.account.specs()
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstanceTypeOfferingsOutput{}
	for _, s := range specs {
		if s.OnDemand <= 0 {
			continue
		}
		for _, zone := range account.Zones() {
			out.InstanceTypeOfferings = append(out.InstanceTypeOfferings, ec2types.InstanceTypeOffering{
				InstanceType: ec2types.InstanceType(s.Name), Location: aws.String(zone), LocationType: ec2types.LocationTypeAvailabilityZone,
			})
		}
	}
	return out, nil
}

// spotTimestamp is when the simulated spot prices were set.
var spotTimestamp = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// DescribeSpotPriceHistory returns the current spot price of every priced
// instance type (or those named) in every zone.
func (e *EC2) DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeSpotPriceHistory")); err != nil {
		return nil, err
	}
	specs, err := e.account.specs()
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeSpotPriceHistoryOutput{}
	for _, s := range specs {
		if s.OnDemand <= 0 || (len(in.InstanceTypes) > 0 && !containsType(in.InstanceTypes, s.Name)) {
			continue
		}
		for _, zone := range account.Zones() {
			out.SpotPriceHistory = append(out.SpotPriceHistory, ec2types.SpotPrice{
				InstanceType: ec2types.InstanceType(s.Name), AvailabilityZone: aws.String(zone),
				ProductDescription: ec2types.RIProductDescriptionLinuxUnix, Timestamp: aws.Time(spotTimestamp),
				SpotPrice: aws.String(fmt.Sprintf("%.6f", instancetypes.SpotPrice(s.Name, zone, s.OnDemand))),
			})
		}
	}
	return out, nil
}

// Pricing is the simulated Pricing API: Linux on-demand prices of the
// account's region.
type Pricing struct{ account *Account }

// Pricing returns the account's Pricing API.
func (a *Account) Pricing() *Pricing { return &Pricing{account: a} }

// GetProducts returns price list documents shaped like AWS's for the
// AmazonEC2 service, filtered by instanceType when asked.
func (p *Pricing) GetProducts(ctx context.Context, in *pricing.GetProductsInput, _ ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	if err := p.account.call(ctx, serviceCall("GetProducts")); err != nil {
		return nil, err
	}
	if p.account.pricingDenied() {
		return nil, apiError("AccessDeniedException", "User: arn:aws:sts::"+accountID+":assumed-role/KarpenterControllerRole-nodewright-sim/nodewright is not authorized to perform: pricing:GetProducts")
	}
	if aws.ToString(in.ServiceCode) != "AmazonEC2" {
		return nil, apiError("InvalidParameterException", "the simulated account prices AmazonEC2 only")
	}
	wantType := pricedType(in.Filters)
	specs, err := p.account.specs()
	if err != nil {
		return nil, err
	}
	out := &pricing.GetProductsOutput{}
	for _, s := range specs {
		if !priced(s, wantType) {
			continue
		}
		doc, err := priceDocument(s)
		if err != nil {
			return nil, err
		}
		out.PriceList = append(out.PriceList, string(doc))
	}
	return out, nil
}

// pricingDenied reports whether the faults deny the Pricing API.
func (a *Account) pricingDenied() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.faults.PricingDenied
}

// pricedType is the instance type a GetProducts call's filters ask for,
// the last one when several do, or "" for all.
func pricedType(filters []pricingtypes.Filter) string {
	wantType := ""
	for _, f := range filters {
		if aws.ToString(f.Field) == "instanceType" && f.Type == pricingtypes.FilterTypeTermMatch {
			wantType = aws.ToString(f.Value)
		}
	}
	return wantType
}

// priced reports whether GetProducts lists the instance type: it has an
// on-demand price and is the type asked for, if one is.
func priced(s instancetypes.Spec, wantType string) bool {
	return s.OnDemand > 0 && (wantType == "" || wantType == s.Name)
}

// priceDocument is the price list document of an instance type's Linux
// on-demand price.
func priceDocument(s instancetypes.Spec) ([]byte, error) {
	return json.Marshal(map[string]any{
		"product": map[string]any{"attributes": map[string]string{
			"instanceType": s.Name, "regionCode": account.Region, "operatingSystem": "Linux", "tenancy": "Shared",
			"preInstalledSw": "NA", "capacitystatus": "Used",
		}},
		"terms": map[string]any{"OnDemand": map[string]any{"term": map[string]any{
			"priceDimensions": map[string]any{"dimension": map[string]any{
				"unit": "Hrs", "pricePerUnit": map[string]string{"USD": fmt.Sprintf("%.6f", s.OnDemand)},
			}},
		}}},
	})
}
