package al2023

// What the external tests (which use nodewright's user data generation,
// itself a user of this package) read of the model's parts.
var (
	RunScripts     = runScripts
	ReadSources    = read
	UserDataSource = userDataSource
	DropInSource   = dropInSource
	Document       = document
	KubeletArgs    = kubeletArgs
)
