package apply

import (
	"encoding/json"
	"hash/fnv"
	"sync"
)

// verified remembers, for each member object, the version last known to hold exactly the fields mysqlfleet
// wants and a digest of what it wanted then. While both still hold, a pass needs no Extract of the owned
// fields, which is most of the CPU of a pass that changes nothing (a member change or a join re-verifies every
// MySQLCluster placed there). Any write by anyone changes the version, and any change of the desired object
// changes the digest, so either brings the full check back.
type verified struct {
	mu sync.Mutex
	m  map[objectKey]verdict
}

type verdict struct {
	resourceVersion string
	digest          uint64
}

// digestOf is a digest of a desired object; 0 when it cannot be encoded, which is never remembered.
func digestOf(desired any) uint64 {
	data, err := json.Marshal(desired)
	if err != nil {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// holds reports whether the object's version was verified (or written) for the same desired digest.
func (v *verified) holds(k objectKey, resourceVersion string, digest uint64) bool {
	if resourceVersion == "" || digest == 0 {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	d, ok := v.m[k]
	return ok && d.resourceVersion == resourceVersion && d.digest == digest
}

// set records that the object's version holds what the digest describes.
func (v *verified) set(k objectKey, resourceVersion string, digest uint64) {
	if resourceVersion == "" || digest == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[objectKey]verdict{}
	}
	v.m[k] = verdict{resourceVersion, digest}
}

// forgetMember drops what is known of every object in a member (it left the registry).
func (v *verified) forgetMember(member string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.m {
		if k.member == member {
			delete(v.m, k)
		}
	}
}

// forget drops what is known of an object (it was deleted).
func (v *verified) forget(k objectKey) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, k)
}
