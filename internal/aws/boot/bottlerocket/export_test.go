package bottlerocket

// KubeletArgs are the kubelet's own arguments, for the external tests.
var KubeletArgs = kubeletArgs
