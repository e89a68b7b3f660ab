// Package bufferroom holds what the provisioner last found of each
// CapacityBuffer's pods (how many have room on nodes there, how many it
// launched for, how many fit nowhere), for the CapacityBuffer controller
// to show in the buffer's Provisioning condition.
package bufferroom

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Room is one buffer's pods as the last plan found them.
type Room struct {
	// Pods is how many pods the buffer keeps room for; Hosted how many
	// have it on nodes or NodeClaims there; Launched how many the plan
	// launched new NodeClaims for; Failed how many fit nowhere.
	Pods, Hosted, Launched, Failed int
}

// Rooms are the buffers' rooms; safe for concurrent use.
type Rooms struct {
	mu    sync.Mutex
	rooms map[types.NamespacedName]Room
}

// New makes an empty record.
func New() *Rooms { return &Rooms{rooms: map[types.NamespacedName]Room{}} }

// Record replaces what is known with a plan's findings.
func (r *Rooms) Record(found map[types.NamespacedName]Room) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rooms = found
}

// Get is what the last plan found of a buffer.
func (r *Rooms) Get(key types.NamespacedName) (Room, bool) {
	if r == nil {
		return Room{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	room, ok := r.rooms[key]
	return room, ok
}
