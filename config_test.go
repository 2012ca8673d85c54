package rocketstore

import (
	"reflect"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
)

// fill sets every exported field of the struct v points to, recursively,
// to a non-zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("x")
		case reflect.Struct:
			if f.Type().NumField() > 0 && f.Type().Field(0).IsExported() {
				fill(t, f)
			} else { // an opaque value such as netip.AddrPort
				f.Set(reflect.New(f.Type()).Elem())
				f.Addr().MethodByName("UnmarshalText").Call([]reflect.Value{reflect.ValueOf([]byte("127.0.0.1:1"))})
			}
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value {
				out := make([]reflect.Value, f.Type().NumOut())
				for i := range out {
					out[i] = reflect.Zero(f.Type().Out(i))
				}
				return out
			}))
		default:
			t.Fatalf("fill: field %s of kind %s", sf.Name, f.Kind())
		}
	}
}

// zeroFields lists the exported fields of struct v that are zero.
func zeroFields(v reflect.Value, prefix string) []string {
	var out []string
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		if f.Kind() == reflect.Struct && f.Type().NumField() > 0 && f.Type().Field(0).IsExported() {
			out = append(out, zeroFields(f, prefix+sf.Name+".")...)
		} else if f.IsZero() {
			out = append(out, prefix+sf.Name)
		}
	}
	return out
}

// TestConfigCarriesEveryEngineField checks that the root Config has every
// field of the engine's and that the conversions both ways copy each one,
// so that a field added to engine.Config cannot be forgotten here.
func TestConfigCarriesEveryEngineField(t *testing.T) {
	rt, et := reflect.TypeOf(Config{}), reflect.TypeOf(engine.Config{})
	for _, p := range [][2]reflect.Type{{et, rt}, {rt, et}} {
		for i := 0; i < p[0].NumField(); i++ {
			if sf := p[0].Field(i); sf.IsExported() {
				if _, ok := p[1].FieldByName(sf.Name); !ok {
					t.Errorf("%s.%s has no counterpart in %s", p[0], sf.Name, p[1])
				}
			}
		}
	}
	if t.Failed() {
		t.FailNow() // the conversions would panic
	}
	var c Config
	fill(t, reflect.ValueOf(&c).Elem())
	if z := zeroFields(reflect.ValueOf(c), ""); len(z) > 0 {
		t.Fatalf("fill left %v zero", z)
	}
	e := c.engine()
	if z := zeroFields(reflect.ValueOf(e), ""); len(z) > 0 {
		t.Errorf("Config.engine does not copy %v", z)
	}
	if z := zeroFields(reflect.ValueOf(configOf(e)), ""); len(z) > 0 {
		t.Errorf("configOf does not copy %v", z)
	}
}

// TestEnumsMatchTheEngine checks that the root's constants have the
// engine's values (they are declared with iota so that go doc shows them
// plainly; the conversions rely on the values being equal).
func TestEnumsMatchTheEngine(t *testing.T) {
	pairs := []struct {
		name       string
		root, want int
	}{
		{"AsyncFlush", int(AsyncFlush), int(engine.AsyncFlush)},
		{"SyncFlush", int(SyncFlush), int(engine.SyncFlush)},
		{"DamageRefuse", int(DamageRefuse), int(engine.DamageRefuse)},
		{"DamageTruncate", int(DamageTruncate), int(engine.DamageTruncate)},
		{"DamageSkip", int(DamageSkip), int(engine.DamageSkip)},
		{"Found", int(Found), int(engine.Found)},
		{"NoMatchedMessage", int(NoMatchedMessage), int(engine.NoMatchedMessage)},
		{"MessageWasRemoving", int(MessageWasRemoving), int(engine.MessageWasRemoving)},
		{"OffsetFoundNull", int(OffsetFoundNull), int(engine.OffsetFoundNull)},
		{"OffsetOverflowBadly", int(OffsetOverflowBadly), int(engine.OffsetOverflowBadly)},
		{"OffsetOverflowOne", int(OffsetOverflowOne), int(engine.OffsetOverflowOne)},
		{"OffsetTooSmall", int(OffsetTooSmall), int(engine.OffsetTooSmall)},
		{"NoMatchedLogicQueue", int(NoMatchedLogicQueue), int(engine.NoMatchedLogicQueue)},
		{"NoMessageInQueue", int(NoMessageInQueue), int(engine.NoMessageInQueue)},
	}
	for _, p := range pairs {
		if p.root != p.want {
			t.Errorf("%s = %d, engine's is %d", p.name, p.root, p.want)
		}
	}
}
