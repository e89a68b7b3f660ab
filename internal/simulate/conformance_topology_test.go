package simulate_test

// topologyCases: topology_test.go of the reference's scheduling tests.
var topologyCases = []conformanceCase{
	{
		ref: "topology: Zonal > should balance pods across zones (match labels)",
		objects: pods(4, "p", "{app: web}", "", `{topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
  whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}`),
		want: []expectation{scheduled("p-*"), skew("topology.kubernetes.io/zone", "app=web", 1, 1, 2)},
	},
}
