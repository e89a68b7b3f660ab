package scheduling

import "slices"

// Effective zones of pending pods, as the plan counts them: a zone's name
// when the pod can go to that zone only, ZoneFlexible when to more than
// one, ZoneNone when to none of the zones the NodePools launch in.
const (
	ZoneFlexible = "flexible"
	ZoneNone     = "none"
)

// zoneUniverse is every zone some NodePool can launch an instance type
// in, sorted.
func zoneUniverse(pools []*pool) []string {
	seen := map[string]bool{}
	for _, pl := range pools {
		zone := pl.Requirements[LabelZone]
		for _, it := range pl.launchable {
			for _, o := range it.Offerings {
				if zone == nil || zone.Has(o.Zone) {
					seen[o.Zone] = true
				}
			}
		}
	}
	zones := make([]string, 0, len(seen))
	for z := range seen {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	return zones
}

// effectiveZone is where a pod's node selector, required node affinity
// and volumes (its terms) let it go, among the zones in universe.
func effectiveZone(p *podInfo, universe []string) string {
	allowed := ""
	count := 0
	for _, z := range universe {
		if slices.ContainsFunc(p.terms, func(t Requirements) bool { return t[LabelZone] == nil || t[LabelZone].Has(z) }) {
			allowed = z
			count++
		}
	}
	switch count {
	case 0:
		return ZoneNone
	case 1:
		return allowed
	}
	return ZoneFlexible
}
