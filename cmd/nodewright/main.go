// Command nodewright is a node autoscaler for Kubernetes on AWS.
package main

import (
	"errors"
	"fmt"
	"os"

	// The image has no CA files: TLS to AWS and the API server trusts the
	// Mozilla roots built in when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		var problem found
		if errors.As(err, &problem) {
			if problem.err != nil {
				fmt.Fprintln(os.Stderr, "error:", problem.err)
			}
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
