package controllers

import (
	"reflect"
	"sync"
	"time"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// echoes remembers the member object versions the manager itself has just written, so that their watch events
// (the echo of an apply) do not bring the MySQLCluster back for another pass that would find nothing to do.
// A resourceVersion names one write in one member's etcd, so a write by anyone else (a controller updating
// status, a person editing a field) has another version and is reconciled as before, and so is every delete.
// An echo that never arrives (the member went away) is forgotten after echoTTL.
type echoes struct {
	mu        sync.Mutex
	written   map[echoKey]time.Time
	lastSweep time.Time
}

type echoKey struct{ member, namespace, name, resourceVersion string }

// echoTTL is how long a write is remembered; watch events arrive within milliseconds to seconds.
const echoTTL = 2 * time.Minute

// record notes that the manager wrote the object's version in the member.
func (e *echoes) record(member, namespace, name, resourceVersion string) {
	if resourceVersion == "" {
		return
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.written == nil {
		e.written = map[echoKey]time.Time{}
	}
	e.written[echoKey{member, namespace, name, resourceVersion}] = now
	if now.Sub(e.lastSweep) > echoTTL {
		for k, at := range e.written {
			if now.Sub(at) > echoTTL {
				delete(e.written, k)
			}
		}
		e.lastSweep = now
	}
}

// take reports whether the object's version is one the manager wrote, and forgets it: an echo is dropped once.
func (e *echoes) take(member string, obj client.Object) bool {
	k := echoKey{member, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion()}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.written[k]; ok {
		delete(e.written, k)
		return true
	}
	return false
}

// resourceVersionOf reads metadata.resourceVersion from an apply configuration into which the API server's
// answer was decoded. Apply configurations have no getter for it; every generated one embeds
// ObjectMetaApplyConfiguration.
func resourceVersionOf(ac any) string {
	v := reflect.ValueOf(ac)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("ObjectMetaApplyConfiguration")
	if !f.IsValid() || f.IsNil() {
		return ""
	}
	if m, ok := f.Interface().(*metav1ac.ObjectMetaApplyConfiguration); ok && m.ResourceVersion != nil {
		return *m.ResourceVersion
	}
	return ""
}
