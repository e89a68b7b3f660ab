package v1

// Reasons of the events recorded on EC2NodeClasses, besides the reasons
// of their conditions.
const (
	// ReasonUserDataWarning means spec.userData has a problem that does not
	// keep nodes from registering.
	ReasonUserDataWarning = "UserDataWarning"
	// ReasonWaitingOnNodeClaimTermination means a deleted EC2NodeClass
	// stays until the NodeClaims that use it are gone.
	ReasonWaitingOnNodeClaimTermination = "WaitingOnNodeClaimTermination"
	// ReasonLegacyInstanceProfileLeft means a deleted EC2NodeClass's
	// instance profile of the name made before profiles held the region
	// was left in place: the same cluster name in another region may
	// still launch with it.
	ReasonLegacyInstanceProfileLeft = "LegacyInstanceProfileLeft"
)

// Reasons of the events recorded on a NodeClaim and its node when the
// interruption queue says their instance goes or is at risk.
const (
	// ReasonSpotInterrupted means EC2 reclaims the spot instance.
	ReasonSpotInterrupted = "SpotInterrupted"
	// ReasonCapacityReservationInterrupted means EC2 reclaims the instance
	// from its capacity reservation.
	ReasonCapacityReservationInterrupted = "CapacityReservationInterrupted"
	// ReasonInstanceScheduledChange means AWS Health scheduled a change
	// for the instance.
	ReasonInstanceScheduledChange = "InstanceScheduledChange"
	// ReasonInstanceStopping means the instance is stopping or stopped.
	ReasonInstanceStopping = "InstanceStopping"
	// ReasonInstanceTerminating means the instance is shutting down or
	// terminated.
	ReasonInstanceTerminating = "InstanceTerminating"
	// ReasonSpotRebalanceRecommendation means EC2 says the spot instance
	// is at elevated risk of interruption.
	ReasonSpotRebalanceRecommendation = "SpotRebalanceRecommendation"
)
