package apply

import (
	"reflect"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// echoes keeps the watch events of the manager's own member writes (the echo of an apply) from bringing the
// MySQLCluster back for another pass that would find nothing to do. A resourceVersion names one write in one
// member's etcd, so a write by anyone else (a controller updating status, a person editing a field) has another
// version and is reconciled as before, and so is every delete.
//
// The echo of an apply may arrive before the apply's answer: an event for an object whose apply is under way is
// held until the answer tells its version, then dropped if it is ours and passed on if not. An answer whose
// event has not arrived yet is remembered, for echoTTL at most (the member may go away before it comes).
type echoes struct {
	mu        sync.Mutex
	written   map[echoKey]time.Time
	inflight  map[objectKey]*flight
	lastSweep time.Time
}

// objectKey names an object of a kind (its Go type's name, such as StatefulSet) in a member.
type objectKey struct{ member, kind, namespace, name string }

// keyOf is the key of a member object as a watch event carries it.
func keyOf(member string, obj client.Object) objectKey {
	return objectKey{member, reflect.TypeOf(obj).Elem().Name(), obj.GetNamespace(), obj.GetName()}
}

type echoKey struct {
	objectKey
	resourceVersion string
}

// flight is an apply under way and the events held for it.
type flight struct {
	applies int
	held    []heldEvent
}

type heldEvent struct {
	resourceVersion string
	pass            func()
}

// echoTTL is how long a written version is remembered; watch events arrive within milliseconds to seconds.
const echoTTL = 2 * time.Minute

// begin notes that an apply of the object is under way.
func (e *echoes) begin(k objectKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight == nil {
		e.inflight = map[objectKey]*flight{}
	}
	f := e.inflight[k]
	if f == nil {
		f = &flight{}
		e.inflight[k] = f
	}
	f.applies++
}

// end notes that the apply finished with the version it wrote ("" when it failed or wrote nothing), drops the
// held event of that version and passes on every other held event.
func (e *echoes) end(k objectKey, resourceVersion string) {
	var pass []func()
	e.mu.Lock()
	f := e.inflight[k]
	if f == nil {
		e.mu.Unlock()
		return
	}
	echoed := false
	for _, h := range f.held {
		if resourceVersion != "" && h.resourceVersion == resourceVersion {
			echoed = true
		} else {
			pass = append(pass, h.pass)
		}
	}
	f.held = nil
	if f.applies--; f.applies <= 0 {
		delete(e.inflight, k)
	}
	if !echoed && resourceVersion != "" {
		e.rememberLocked(echoKey{k, resourceVersion})
	}
	e.mu.Unlock()
	for _, p := range pass {
		p()
	}
}

func (e *echoes) rememberLocked(k echoKey) {
	now := time.Now()
	if e.written == nil {
		e.written = map[echoKey]time.Time{}
	}
	e.written[k] = now
	if now.Sub(e.lastSweep) > echoTTL {
		for old, at := range e.written {
			if now.Sub(at) > echoTTL {
				delete(e.written, old)
			}
		}
		e.lastSweep = now
	}
}

// filter passes the event of a member object on (calls pass) unless it is the echo of the manager's own write:
// an echo already answered is dropped at once (once), and an event for an object being applied is held until
// the apply ends.
func (e *echoes) filter(member string, obj client.Object, pass func()) {
	k := keyOf(member, obj)
	rv := obj.GetResourceVersion()
	e.mu.Lock()
	if _, ok := e.written[echoKey{k, rv}]; ok {
		delete(e.written, echoKey{k, rv})
		e.mu.Unlock()
		return
	}
	if f := e.inflight[k]; f != nil {
		f.held = append(f.held, heldEvent{resourceVersion: rv, pass: pass})
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	pass()
}
