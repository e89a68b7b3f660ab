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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/internal/aws/sdk"
)

// Server answers AWS API requests with an account's simulated services.
type Server struct {
	// EC2 serves the operations of the sdk.EC2 and sdk.Console
	// interfaces; IAM, SSM, EKS (sdk.EKS and sdk.AccessEntries) and
	// Pricing those of theirs.
	EC2 interface {
		sdk.EC2
		sdk.Console
	}
	IAM sdk.IAM
	SSM sdk.SSM
	EKS interface {
		sdk.EKS
		sdk.AccessEntries
	}
	Pricing  sdk.Pricing
	SQS      SQS
	requests atomic.Uint64
}

// SQS is what the endpoint serves of SQS: the operations of sdk.SQS, and
// SendMessage to put messages on a queue by hand.
type SQS interface {
	sdk.SQS
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// operations lists the methods of interfaces: the operations served.
func operations(ifaces ...reflect.Type) map[string]bool {
	out := map[string]bool{}
	for _, t := range ifaces {
		for i := range t.NumMethod() {
			out[t.Method(i).Name] = true
		}
	}
	return out
}

var (
	iamActions     = operations(reflect.TypeFor[sdk.IAM]())
	ssmActions     = operations(reflect.TypeFor[sdk.SSM]())
	pricingActions = operations(reflect.TypeFor[sdk.Pricing]())
	sqsActions     = operations(reflect.TypeFor[SQS]())
)

// ec2Actions are the EC2 operations served: those nodewright calls.
var ec2Actions = operations(reflect.TypeFor[sdk.EC2](), reflect.TypeFor[sdk.Console]())

// ServeHTTP dispatches on the service the request is signed for.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := fmt.Sprintf("nodewright-sim-%08d", s.requests.Add(1))
	switch service := signedService(r); service {
	case "ec2":
		s.serveEC2(w, r, id)
	case "iam":
		s.serveIAM(w, r, id)
	case "ssm":
		s.serveJSON(w, r, id, s.SSM, "AmazonSSM.", ssmActions, "1.1")
	case "pricing":
		s.serveJSON(w, r, id, s.Pricing, "AWSPriceListService.", pricingActions, "1.1")
	case "sqs":
		s.serveJSON(w, r, id, s.SQS, "AmazonSQS.", sqsActions, "1.0")
	case "eks":
		s.serveEKS(w, r, id)
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
	if err := decodeQuery(parseQuery(r.Form), in.Elem(), queryDialect{names: ec2QueryNames}); err != nil {
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

// call runs an operation of api with the decoded input.
func call(ctx context.Context, api any, action string, in reflect.Value) (any, error) {
	res := reflect.ValueOf(api).MethodByName(action).Call([]reflect.Value{reflect.ValueOf(ctx), in})
	err, _ := res[1].Interface().(error)
	return res[0].Interface(), err
}

// input is a new input of an operation of api.
func input(api any, action string) reflect.Value {
	return reflect.New(reflect.ValueOf(api).MethodByName(action).Type().In(1).Elem())
}

func (s *Server) serveIAM(w http.ResponseWriter, r *http.Request, id string) {
	fail := func(status int, code, message string) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		_ = writeQueryError(w, code, message, id)
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "MalformedQueryString", err.Error())
		return
	}
	action := r.Form.Get("Action")
	if !iamActions[action] {
		fail(http.StatusBadRequest, "InvalidAction", fmt.Sprintf("Could not find operation %s for version 2010-05-08", action))
		return
	}
	in := input(s.IAM, action)
	if err := decodeQuery(parseQuery(r.Form), in.Elem(), queryDialect{wrapped: true}); err != nil {
		fail(http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	out, err := call(r.Context(), s.IAM, action, in)
	if err != nil {
		status, code, message := errorOf(err)
		if code == "NoSuchEntity" {
			status = http.StatusNotFound
		}
		fail(status, code, message)
		return
	}
	var body bytes.Buffer
	if err := writeQueryResponse(&body, action, "https://iam.amazonaws.com/doc/2010-05-08/", id, out); err != nil {
		fail(http.StatusInternalServerError, "ServiceFailure", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write(body.Bytes())
}

// serveJSON serves an AWS JSON service (protocol version 1.0 or 1.1): the
// X-Amz-Target header names the operation, the body is its input.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, id string, api any, prefix string, actions map[string]bool, version string) {
	if api == nil {
		writeJSONError(w, http.StatusBadRequest, "UnknownOperationException", "the simulated account does not serve "+strings.TrimSuffix(prefix, "."), id)
		return
	}
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), prefix)
	if !ok || !actions[action] {
		writeJSONError(w, http.StatusBadRequest, "UnknownOperationException", "unknown operation "+r.Header.Get("X-Amz-Target"), id)
		return
	}
	in := input(api, action)
	if err := json.NewDecoder(r.Body).Decode(in.Interface()); err != nil {
		writeJSONError(w, http.StatusBadRequest, "SerializationException", err.Error(), id)
		return
	}
	out, err := call(r.Context(), api, action, in)
	if err != nil {
		status, code, message := errorOf(err)
		writeJSONError(w, status, code, message, id)
		return
	}
	writeJSON(w, "application/x-amz-json-"+version, id, jsonValue(reflect.ValueOf(out), false))
}

// serveEKS serves the REST routes of the EKS operations nodewright calls.
func (s *Server) serveEKS(w http.ResponseWriter, r *http.Request, id string) {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i := range parts {
		parts[i], _ = url.PathUnescape(parts[i])
	}
	out, served, err := s.callEKS(r.Context(), r.Method, parts)
	if !served {
		writeJSONError(w, http.StatusNotFound, "UnknownOperationException", r.Method+" "+r.URL.Path+" is not served", id)
		return
	}
	if err != nil {
		status, code, message := errorOf(err)
		if code == "ResourceNotFoundException" {
			status = http.StatusNotFound
		}
		writeJSONError(w, status, code, message, id)
		return
	}
	writeJSON(w, "application/json", id, jsonValue(reflect.ValueOf(out), true))
}

// callEKS calls the EKS operation of a REST route, given the unescaped
// parts of its path; served is false for a route it does not serve.
func (s *Server) callEKS(ctx context.Context, method string, parts []string) (out any, served bool, err error) {
	if method != http.MethodGet || parts[0] != "clusters" {
		return nil, false, nil
	}
	switch {
	case len(parts) == 2:
		out, err = s.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &parts[1]})
	case len(parts) == 4 && parts[2] == "access-entries":
		out, err = s.EKS.DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: &parts[1], PrincipalArn: &parts[3]})
	default:
		return nil, false, nil
	}
	return out, true, err
}

func writeJSON(w http.ResponseWriter, contentType, id string, body any) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-Requestid", id)
	_ = json.NewEncoder(w).Encode(body)
}

// writeJSONError answers in the AWS JSON protocols' error shape: the code
// in the X-Amzn-ErrorType header and __type, the message in message.
func writeJSONError(w http.ResponseWriter, status int, code, message, id string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("X-Amzn-Requestid", id)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": message})
}
