// Command rbacrules renders the Helm chart and writes the rules of its
// ClusterRole and Role as JSON (internal/operator/rbac/rules.json, by
// make generate), for the controller to check at start without linking
// the chart's renderer.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/nodewright/nodewright/charts"
)

func main() {
	rules, err := charts.RBACRules()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := json.MarshalIndent(rules, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
