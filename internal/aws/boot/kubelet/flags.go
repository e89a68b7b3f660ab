package kubelet

// Flag is one flag the kubelet defines: its name, the type of its value
// (pflag's name for it) and whether it needs no value (a bool).
type Flag struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	NoValue   bool   `json:"noValue,omitempty"`
	Shorthand string `json:"shorthand,omitempty"`
}
