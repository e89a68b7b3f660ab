package instancetypes

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// PriceTable is a built-in on-demand price table, by region.
type PriceTable map[string]RegionPrices

// RegionPrices are one region's on-demand prices (US dollars an hour, Linux,
// shared tenancy) as published on a date.
type RegionPrices struct {
	Published string             `json:"published"`
	Source    string             `json:"source"`
	OnDemand  map[string]float64 `json:"onDemand"`
}

//go:embed prices.json
var builtInJSON []byte

// BuiltInPrices is the built-in table for a region, and the region it is
// for: us-east-1's when there is none for the region (prices elsewhere
// differ by a few percent; the condition that reports their use says so).
func BuiltInPrices(region string) (RegionPrices, string, error) {
	var table PriceTable
	if err := json.Unmarshal(builtInJSON, &table); err != nil {
		return RegionPrices{}, "", fmt.Errorf("decoding the built-in prices: %w", err)
	}
	if p, ok := table[region]; ok {
		return p, region, nil
	}
	return table["us-east-1"], "us-east-1", nil
}

// PriceListEntry is what nodewright reads of one Pricing API price list
// entry: an instance type's on-demand price and when it was published.
type PriceListEntry struct {
	InstanceType string
	USDPerHour   float64
	Published    string // YYYY-MM-DD
}

// priceDocument is the part of a Pricing API price list entry read here.
type priceDocument struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	PublicationDate string `json:"publicationDate"`
	Terms           struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParsePriceListEntry reads one entry of a GetProducts answer; an entry
// without a positive US dollar price has USDPerHour 0.
func ParsePriceListEntry(raw string) (PriceListEntry, error) {
	var doc priceDocument
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return PriceListEntry{}, fmt.Errorf("reading a price list entry: %w", err)
	}
	e := PriceListEntry{InstanceType: doc.Product.Attributes.InstanceType}
	if t, err := time.Parse(time.RFC3339, doc.PublicationDate); err == nil {
		e.Published = t.UTC().Format(time.DateOnly)
	}
	for _, term := range doc.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if v, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64); err == nil && v > 0 {
				e.USDPerHour = v
			}
		}
	}
	return e, nil
}

// PriceSource says where the prices in use come from.
type PriceSource string

// Price sources.
const (
	// PricesFromAPI: the Pricing API (on-demand) or DescribeSpotPriceHistory
	// (spot) answered at the last read.
	PricesFromAPI PriceSource = "API"
	// PricesLastKnown: the last read failed; the last answer is kept.
	PricesLastKnown PriceSource = "LastKnown"
	// PricesBuiltIn: no read has succeeded yet; on-demand prices are the
	// built-in table's, spot prices the on-demand ones (never cheaper
	// than they are).
	PricesBuiltIn PriceSource = "BuiltIn"
)

// PriceState is where one kind of price (on-demand or spot) comes from
// now.
type PriceState struct {
	Source PriceSource
	// Since is when the source came into use.
	Since time.Time
	// Answered is when the API last answered (zero: never).
	Answered time.Time
	// Err is the last read's error while the source is not the API.
	Err error
	// Published and TableRegion describe the built-in table in use.
	Published, TableRegion string
}

// PriceStatus is where the prices in use come from.
type PriceStatus struct {
	OnDemand, Spot PriceState
}

// set moves a state to a source, keeping Since and the first error while
// the source stays (what the status says then does not change each read).
func (s *PriceState) set(src PriceSource, now time.Time, err error) {
	if s.Source != src || s.Since.IsZero() {
		s.Since, s.Err = now, err
	}
	s.Source = src
	if src == PricesFromAPI {
		s.Answered, s.Err = now, nil
	}
}

// Read reports whether prices were read at all yet.
func (st PriceStatus) Read() bool { return st.OnDemand.Source != "" && st.Spot.Source != "" }
