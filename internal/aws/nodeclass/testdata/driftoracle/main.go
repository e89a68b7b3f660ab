// Command driftoracle tells, for each pair of objects it reads (one JSON
// object a line: kind, before, after), whether the reference's static
// drift hash (NodePool.Hash, EC2NodeClass.Hash) of the two differs, and
// both hashes (what the reference stamps), one JSON object a line.
package main

import (
	"bufio"
	"encoding/json"
	"os"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

type input struct {
	Kind   string          `json:"kind"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

type output struct {
	Drifted bool   `json:"drifted"`
	Hash    string `json:"hash,omitempty"`
	After   string `json:"after,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		var o output
		switch c.Kind {
		case "NodePool":
			var a, b karpv1.NodePool
			if err := json.Unmarshal(c.Before, &a); err != nil {
				o.Error = err.Error()
			} else if err := json.Unmarshal(c.After, &b); err != nil {
				o.Error = err.Error()
			} else {
				o.Drifted, o.Hash, o.After, o.Version = a.Hash() != b.Hash(), a.Hash(), b.Hash(), karpv1.NodePoolHashVersion
			}
		case "EC2NodeClass":
			var a, b awsv1.EC2NodeClass
			if err := json.Unmarshal(c.Before, &a); err != nil {
				o.Error = err.Error()
			} else if err := json.Unmarshal(c.After, &b); err != nil {
				o.Error = err.Error()
			} else {
				o.Drifted, o.Hash, o.After, o.Version = a.Hash(nil) != b.Hash(nil), a.Hash(nil), b.Hash(nil), awsv1.EC2NodeClassHashVersion
			}
		default:
			o.Error = "unknown kind " + c.Kind
		}
		if err := out.Encode(o); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}
