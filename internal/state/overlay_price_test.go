package state_test

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/state"
)

// A NodeOverlay read from a manifest (simulate, plan, doctor) never met
// the CRD's pattern: a price that is not a finite decimal is refused, as
// the API server would.
func TestOverlayPriceMustBeAFiniteDecimal(t *testing.T) {
	for _, bad := range []string{"NaN", "nan", "Inf", "+Inf", "-1", "1e3", "abc"} {
		if err := state.ValidateOverlayPrice(v1alpha1.NodeOverlaySpec{Price: ptr.To(bad)}); err == nil {
			t.Errorf("price %q accepted", bad)
		}
	}
	for _, bad := range []string{"+NaN", "-Inf", "+Inf%"} {
		if err := state.ValidateOverlayPrice(v1alpha1.NodeOverlaySpec{PriceAdjustment: ptr.To(bad)}); err == nil {
			t.Errorf("priceAdjustment %q accepted", bad)
		}
	}
	for _, good := range []string{"0", "0.10", "12.5"} {
		if err := state.ValidateOverlayPrice(v1alpha1.NodeOverlaySpec{Price: ptr.To(good)}); err != nil {
			t.Errorf("price %q: %v", good, err)
		}
	}
}
