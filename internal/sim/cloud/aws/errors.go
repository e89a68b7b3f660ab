package aws

import "github.com/aws/smithy-go"

// apiError returns an error shaped like the SDK's: a smithy API error with
// the service's code, so the provider's error translation sees what it
// would see from AWS.
func apiError(code, message string) error {
	return &smithy.GenericAPIError{Code: code, Message: message, Fault: smithy.FaultClient}
}
