package runner

import (
	"testing"

	"github.com/nodewright/nodewright/internal/operator/command"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The controller process gets the decision settings of the sim's
// configuration: its own command line reads them back as they were.
func TestControllerProcessGetsTheDecisionSettings(t *testing.T) {
	cfg := DefaultOptions().Operator
	cfg.Policy = scheduling.Policy{RelaxMinValues: true, IgnorePreferences: true}
	cfg.ReservedENIs, cfg.VMMemoryOverheadPercent, cfg.IgnoreDRARequests = 2, 0.05, true
	args := controllerArgs(cfg, "127.0.0.1:0")
	if args[0] != "controller" {
		t.Fatalf("args start %q, not the controller command", args[0])
	}
	d, err := command.ControllerDecisions(args[1:], nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Policy != cfg.Policy || d.ReservedENIs != 2 || d.VMMemoryOverheadPercent != 0.05 || !d.IgnoreDRARequests {
		t.Errorf("the controller reads %+v from %q", d, args)
	}
}
