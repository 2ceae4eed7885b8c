package genkitstore_test

import (
	"reflect"
	"unsafe"

	gksession "github.com/firebase/genkit/go/core/x/session"
)

// Genkit's tests of its session package read and set the unexported
// field store of a Session (they are inside the package); ported here
// they do it through these two, by reflection, so that each assertion
// stays what it was.

// storeField returns the field store of sess, settable.
func storeField[S any](sess *gksession.Session[S]) reflect.Value {
	f := reflect.ValueOf(sess).Elem().FieldByName("store")
	if !f.IsValid() {
		panic("genkit's Session has no field store: the pinned version changed")
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// storeOf returns the store sess persists to (nil for none).
func storeOf[S any](sess *gksession.Session[S]) gksession.Store[S] {
	st, _ := storeField(sess).Interface().(gksession.Store[S])
	return st
}

// setStore makes sess persist to st.
func setStore[S any](sess *gksession.Session[S], st gksession.Store[S]) {
	storeField(sess).Set(reflect.ValueOf(&st).Elem())
}
