// Package awsapi serves a simulated AWS account over HTTP in the AWS
// protocols, so that the AWS SDK's own clients (and the AWS CLI) can talk
// to it: their serializers, retryer and error parsing run as against AWS.
//
// EC2 speaks the EC2 query protocol: a form-encoded POST naming the Action,
// answered in XML. The wire names of every field come from the SDK's
// generated code (ec2names.go, written by hack/awsnames).
package awsapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/internal/aws/sdk"
)

// Server answers AWS API requests with an account's simulated services.
type Server struct {
	// EC2 serves the operations of the sdk.EC2 and sdk.Console
	// interfaces.
	EC2 interface {
		sdk.EC2
		sdk.Console
	}
	requests atomic.Uint64
}

// ec2Actions are the EC2 operations served: those nodewright calls.
var ec2Actions = func() map[string]bool {
	out := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[sdk.EC2](), reflect.TypeFor[sdk.Console]()} {
		for i := range t.NumMethod() {
			out[t.Method(i).Name] = true
		}
	}
	return out
}()

// ServeHTTP dispatches on the service the request is signed for.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := fmt.Sprintf("nodewright-sim-%08d", s.requests.Add(1))
	switch service := signedService(r); service {
	case "ec2":
		s.serveEC2(w, r, id)
	default:
		w.WriteHeader(http.StatusBadRequest)
		_ = writeEC2Error(w, "UnsupportedOperation", fmt.Sprintf("the simulated account does not serve %q requests", service), id)
	}
}

// signedService reads the service from a SigV4 Authorization header's
// credential scope (Credential=KEY/DATE/REGION/SERVICE/aws4_request).
func signedService(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

func (s *Server) serveEC2(w http.ResponseWriter, r *http.Request, id string) {
	fail := func(status int, code, message string) {
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(status)
		_ = writeEC2Error(w, code, message, id)
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "MalformedQueryString", err.Error())
		return
	}
	action := r.Form.Get("Action")
	if !ec2Actions[action] {
		fail(http.StatusBadRequest, "InvalidAction", fmt.Sprintf("The action %s is not valid for this web service.", action))
		return
	}
	method := reflect.ValueOf(s.EC2).MethodByName(action)
	in := reflect.New(method.Type().In(1).Elem())
	if err := decodeQuery(parseQuery(r.Form), in.Elem(), ec2QueryNames); err != nil {
		fail(http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	res := method.Call([]reflect.Value{reflect.ValueOf(r.Context()), in})
	if err, _ := res[1].Interface().(error); err != nil {
		status, code, message := errorOf(err)
		fail(status, code, message)
		return
	}
	var body bytes.Buffer
	if err := writeEC2Response(&body, action, id, res[0].Interface()); err != nil {
		fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = w.Write(body.Bytes())
}

// errorOf is the HTTP status, code and message AWS answers an error with:
// the account's API errors keep their code; throttling is 503.
func errorOf(err error) (int, string, string) {
	var api smithy.APIError
	if !errors.As(err, &api) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return http.StatusServiceUnavailable, "RequestCanceled", err.Error()
		}
		return http.StatusInternalServerError, "InternalError", err.Error()
	}
	status := http.StatusBadRequest
	switch api.ErrorCode() {
	case "RequestLimitExceeded", "Throttling", "ThrottlingException":
		status = http.StatusServiceUnavailable
	}
	return status, api.ErrorCode(), api.ErrorMessage()
}
