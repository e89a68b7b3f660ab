package whatif

import (
	"fmt"
	"strings"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// zones are those a plan uses for an EC2NodeClass whose status names no
// subnet: three of the region planned for.
func (o *Objects) zones() []string {
	if o.Region == "" {
		return DefaultZones
	}
	return []string{o.Region + "a", o.Region + "b", o.Region + "c"}
}

// regionWarnings say what the plan assumes of the region it is made for:
// the prices are the built-in catalog's, for its region, and an
// EC2NodeClass whose subnets lie in another region is planned in its own
// zones.
func (o *Objects) regionWarnings() []string {
	if o.Region == "" {
		return nil
	}
	var out []string
	prices, region, err := instancetypes.BuiltInPrices(o.Region)
	if err == nil && region != o.Region {
		out = append(out, fmt.Sprintf("prices: the built-in catalog has no prices for %s; these are %s's on-demand prices (published %s), which differ there by a few percent, and zones %s are assumed; an EC2NodeClass's status (a cluster's dump) gives its real zones",
			o.Region, region, prices.Published, strings.Join(o.zones(), ", ")))
	}
	for _, nc := range o.EC2NodeClasses {
		for _, s := range nc.Status.Subnets {
			if !strings.HasPrefix(s.Zone, o.Region) {
				out = append(out, fmt.Sprintf("EC2NodeClass %s: its subnets are in %s, not in --region %s; it is planned in its own zones", nc.Name, s.Zone, o.Region))
				break
			}
		}
	}
	return out
}
