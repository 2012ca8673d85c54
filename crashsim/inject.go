package crashsim

import "sync"

// Injector decides whether an operation fails, and how. It is called with
// the FS lock held, so it must not call back into the FS. A nil error lets
// the operation run.
type Injector interface {
	Inject(op Op) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op) error

// Inject calls f(op).
func (f InjectorFunc) Inject(op Op) error { return f(op) }

// Predicate selects operations. A predicate built by Nth keeps state, so
// each one should be used by one Injector only.
type Predicate func(op Op) bool

// Fail returns an Injector that fails the operations p selects with err.
func Fail(p Predicate, err error) Injector {
	return InjectorFunc(func(op Op) error {
		if p(op) {
			return err
		}
		return nil
	})
}

// CrashWhen returns an Injector that freezes the FS at the first operation
// p selects.
func CrashWhen(p Predicate) Injector { return Fail(p, ErrCrash) }

// Chain returns an Injector that asks each of injs in turn and returns the
// first error.
func Chain(injs ...Injector) Injector {
	return InjectorFunc(func(op Op) error {
		for _, inj := range injs {
			if inj == nil {
				continue
			}
			if err := inj.Inject(op); err != nil {
				return err
			}
		}
		return nil
	})
}

// OnKind selects operations of the given kinds.
func OnKind(kinds ...OpKind) Predicate {
	return func(op Op) bool {
		for _, k := range kinds {
			if op.Kind == k {
				return true
			}
		}
		return false
	}
}

// Mutating selects the operations that change the file system.
func Mutating() Predicate { return func(op Op) bool { return op.Kind.Mutating() } }

// Nth selects the k-th operation (1-based) that p selects, and no other.
func Nth(k int, p Predicate) Predicate {
	var mu sync.Mutex
	n := 0
	return func(op Op) bool {
		if !p(op) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		return n == k
	}
}

// UnderPath selects operations on prefix or on the files below it.
func UnderPath(prefix string) Predicate {
	prefix = clean(prefix)
	return func(op Op) bool { return within(prefix, clean(op.Path)) }
}
