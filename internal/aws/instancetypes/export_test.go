package instancetypes

// FromRecord is the catalog entry of an instance type EC2 describes, for
// the tests that feed records of their own.
var FromRecord = specOf
