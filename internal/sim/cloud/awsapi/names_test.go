package awsapi

import (
	"reflect"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/sdk"
)

// Every EC2 operation nodewright calls has its wire names generated (make
// generate): without them the endpoint would decode an empty request and
// answer as if it had done what was asked.
func TestEveryEC2OperationHasItsWireNames(t *testing.T) {
	for _, iface := range []reflect.Type{reflect.TypeFor[sdk.EC2](), reflect.TypeFor[sdk.Console]()} {
		for i := range iface.NumMethod() {
			m := iface.Method(i)
			in := m.Type.In(1).Elem().Name()
			if _, ok := ec2QueryNames[in]; !ok {
				t.Errorf("%s: %s has no query names; run make generate (hack/awsnames)", m.Name, in)
			}
		}
	}
}
