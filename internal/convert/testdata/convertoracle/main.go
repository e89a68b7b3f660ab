// Command convertoracle converts v1beta1 objects to v1 with the
// reference's own conversion (Karpenter v1.0.8 and its AWS provider):
// one JSON case a line in, the v1 object as JSON a line out.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	awsv1beta1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	karpv1beta1 "sigs.k8s.io/karpenter/pkg/apis/v1beta1"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
)

type input struct {
	Kind     string          `json:"kind"`
	Object   json.RawMessage `json:"object"`
	NodePool json.RawMessage `json:"nodePool,omitempty"`
}

func main() {
	// The reference registers its types on client-go's scheme.
	scheme := clientscheme.Scheme
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fail(err)
		}
		builder := fake.NewClientBuilder().WithScheme(scheme)
		if len(c.NodePool) > 0 {
			np := &karpv1.NodePool{}
			if err := json.Unmarshal(c.NodePool, np); err != nil {
				fail(err)
			}
			builder = builder.WithObjects(np)
		}
		ctx := injection.WithNodeClasses(context.Background(), []schema.GroupVersionKind{{Group: "karpenter.k8s.aws", Version: "v1", Kind: "EC2NodeClass"}})
		ctx = injection.WithClient(ctx, builder.Build())
		var result any
		switch c.Kind {
		case "NodePool":
			from, to := &karpv1beta1.NodePool{}, &karpv1.NodePool{}
			must(json.Unmarshal(c.Object, from))
			must(to.ConvertFrom(ctx, from))
			result = to
		case "NodeClaim":
			from, to := &karpv1beta1.NodeClaim{}, &karpv1.NodeClaim{}
			must(json.Unmarshal(c.Object, from))
			must(to.ConvertFrom(ctx, from))
			result = to
		case "EC2NodeClass":
			from, to := &awsv1beta1.EC2NodeClass{}, &awsv1.EC2NodeClass{}
			must(json.Unmarshal(c.Object, from))
			must(to.ConvertFrom(ctx, from))
			result = to
		default:
			fail(fmt.Errorf("kind %q", c.Kind))
		}
		data, err := json.Marshal(result)
		must(err)
		out.Write(data)
		out.WriteByte('\n')
	}
	must(in.Err())
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
