// Package defaults fills the zero fields of a configuration struct with
// their defaults. Every Config in the module (engine, index, broker,
// server, remoting, verify) has a withDefaults method written with Set, so
// that "zero means the default" reads the same everywhere: one line a
// field, the default beside the field's name.
package defaults

import "reflect"

// Set sets *p to v when *p is zero: the zero value of its type, or an
// empty slice or map (a nil func, pointer or interface is zero too).
func Set[T any](p *T, v T) {
	if isZero(p) {
		*p = v
	}
}

// Lazy is Set for a default that costs something to compute (f runs only
// when *p is zero).
func Lazy[T any](p *T, f func() T) {
	if isZero(p) {
		*p = f()
	}
}

func isZero[T any](p *T) bool {
	v := reflect.ValueOf(p).Elem()
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}
