package nodeclass

import (
	"errors"

	"github.com/aws/smithy-go"
)

// isNotFound reports an AWS "not found" error.
func isNotFound(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "ParameterNotFound", "InvalidSubnetID.NotFound", "InvalidGroup.NotFound", "InvalidAMIID.NotFound", "NoSuchEntity", "InvalidCapacityReservationId.NotFound", "InvalidPlacementGroup.Unknown", "InvalidPlacementGroupId.NotFound":
		return true
	}
	return false
}
