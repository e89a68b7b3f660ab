// Command prices writes the built-in on-demand price table nodewright
// launches with while the Pricing API cannot be read (no permission, no
// route to its endpoint, an outage), one table per region with the date its
// prices were published:
//
//	go run ./hack/prices > internal/aws/instancetypes/prices.json
//
// us-east-1's prices are the table's own (public EC2 prices, dated), kept
// for the types of the embedded instance type catalog (hack/catalog). Any other region's come from a
// price list saved from the Pricing API into hack/prices/price-lists, one
// file per region named REGION.json, as
//
//	aws pricing get-products --region us-east-1 --service-code AmazonEC2 \
//	  --filters Type=TERM_MATCH,Field=regionCode,Value=REGION \
//	  Type=TERM_MATCH,Field=operatingSystem,Value=Linux Type=TERM_MATCH,Field=tenancy,Value=Shared \
//	  Type=TERM_MATCH,Field=preInstalledSw,Value=NA Type=TERM_MATCH,Field=capacitystatus,Value=Used \
//	  > hack/prices/price-lists/REGION.json
//
// read with the same parser the controller uses for the live answer.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

func main() {
	table := instancetypes.PriceTable{}
	us, err := fromCatalog()
	if err != nil {
		log.Fatal(err)
	}
	table["us-east-1"] = us
	files, err := filepath.Glob("hack/prices/price-lists/*.json")
	if err != nil {
		log.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		region := strings.TrimSuffix(filepath.Base(f), ".json")
		prices, err := fromPriceList(f)
		if err != nil {
			log.Fatalf("%s: %v", f, err)
		}
		table[region] = prices
	}
	out, err := json.MarshalIndent(table, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
}

// fromCatalog keeps us-east-1's published on-demand prices for the types
// of the embedded catalog (the table is where the catalog's prices come
// from; a type the catalog no longer describes loses its price).
func fromCatalog() (instancetypes.RegionPrices, error) {
	us, _, err := instancetypes.BuiltInPrices("us-east-1")
	if err != nil {
		return instancetypes.RegionPrices{}, err
	}
	specs, err := instancetypes.Catalog()
	if err != nil {
		return instancetypes.RegionPrices{}, err
	}
	out := instancetypes.RegionPrices{Published: us.Published, Source: us.Source, OnDemand: map[string]float64{}}
	for _, s := range specs {
		if p, ok := us.OnDemand[s.Name]; ok {
			out.OnDemand[s.Name] = p
		}
	}
	return out, nil
}

// fromPriceList reads a saved GetProducts answer.
func fromPriceList(path string) (instancetypes.RegionPrices, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return instancetypes.RegionPrices{}, err
	}
	var doc struct{ PriceList []string }
	if err := json.Unmarshal(data, &doc); err != nil {
		return instancetypes.RegionPrices{}, err
	}
	out := instancetypes.RegionPrices{Source: "the AWS Pricing API (GetProducts), saved in " + path, OnDemand: map[string]float64{}}
	for _, raw := range doc.PriceList {
		e, err := instancetypes.ParsePriceListEntry(raw)
		if err != nil {
			return out, err
		}
		if e.USDPerHour > 0 {
			out.OnDemand[e.InstanceType] = e.USDPerHour
		}
		out.Published = max(out.Published, e.Published)
	}
	return out, nil
}
