package nodeclass

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// PriceReader reads the prices launches use and says where they come from.
type PriceReader interface {
	PriceStatus(ctx context.Context) instancetypes.PriceStatus
}

// PricesCondition says where the prices launches are chosen by come from.
// It is False, and never blocks a launch, while the Pricing API or the
// spot price history cannot be read: nodes are then priced by the last
// answer or the built-in table, and the message says since when, why and
// what lets nodewright read them.
func PricesCondition(st instancetypes.PriceStatus) metav1.Condition {
	od, spot := st.OnDemand, st.Spot
	if od.Source == instancetypes.PricesFromAPI && spot.Source == instancetypes.PricesFromAPI {
		return metav1.Condition{Type: awsv1.ConditionPricesCurrent, Status: metav1.ConditionTrue, Reason: awsv1.ReasonPricingAPI,
			Message: fmt.Sprintf("on-demand prices from the Pricing API since %s, spot prices from the spot price history since %s", stamp(od.Since), stamp(spot.Since))}
	}
	reason, msg := awsv1.ReasonLastKnownPrices, ""
	switch od.Source {
	case instancetypes.PricesBuiltIn:
		reason = awsv1.ReasonBuiltInPrices
		msg = fmt.Sprintf("on-demand prices are the built-in table of %s published %s, since %s, because %v; grant pricing:GetProducts and let the controller reach the Pricing API's endpoint (api.pricing.us-east-1.amazonaws.com)",
			od.TableRegion, od.Published, stamp(od.Since), od.Err)
	case instancetypes.PricesLastKnown:
		msg = fmt.Sprintf("on-demand prices are those the Pricing API answered at %s, since %s, because %v; grant pricing:GetProducts and let the controller reach the Pricing API's endpoint (api.pricing.us-east-1.amazonaws.com)",
			stamp(od.Answered), stamp(od.Since), od.Err)
	default:
		msg = "on-demand prices from the Pricing API since " + stamp(od.Since)
	}
	switch spot.Source {
	case instancetypes.PricesBuiltIn:
		reason = awsv1.ReasonBuiltInPrices
		msg += fmt.Sprintf("; spot offerings are priced as on-demand since %s, because %v; grant ec2:DescribeSpotPriceHistory", stamp(spot.Since), spot.Err)
	case instancetypes.PricesLastKnown:
		msg += fmt.Sprintf("; spot prices are those answered at %s, since %s, because %v", stamp(spot.Answered), stamp(spot.Since), spot.Err)
	default:
		msg += "; spot prices from the spot price history since " + stamp(spot.Since)
	}
	return metav1.Condition{Type: awsv1.ConditionPricesCurrent, Status: metav1.ConditionFalse, Reason: reason,
		Message: msg + "; nodes still launch, the cheapest by these prices"}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
