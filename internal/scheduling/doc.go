// Package scheduling decides which NodeClaims to create for pending pods.
// It is pure: no client, no clock, no globals. Given NodePools with their
// instance types and AMIs, existing nodes, pending pods and DaemonSets, Solve
// returns a deterministic plan: pods on existing nodes, new NodeClaims with
// their cheapest instance types, and a reason a person can act on for every
// pod that cannot be placed.
package scheduling
