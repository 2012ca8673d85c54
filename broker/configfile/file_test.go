package configfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/crashsim"
)

const name = "config/t.json"

type table struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	Name        string                     `json:"name"`
}

func v(n int64) table {
	return table{OffsetTable: map[string]map[int32]int64{"T@G": {0: n, -1: -n}}, Name: fmt.Sprintf("v%d", n)}
}

func TestDecodeFastjson(t *testing.T) {
	var got table
	src := "{\"offsetTable\":{\"T@G\":{0:250,-1:-3, 12 :\n-7}},\"name\":\"a 1:2,{3:4}\"}"
	if err := configfile.Decode([]byte(src), &got); err != nil {
		t.Fatal(err)
	}
	if q := got.OffsetTable["T@G"]; q[0] != 250 || q[-1] != -3 || q[12] != -7 || got.Name != "a 1:2,{3:4}" {
		t.Fatalf("%+v", got)
	}
	var nested map[string]map[string]map[string]int
	if err := configfile.Decode([]byte(`{1:{2:{3:4}},"x":{5:{}}}`), &nested); err != nil || nested["1"]["2"]["3"] != 4 {
		t.Fatalf("%v %v", nested, err)
	}
	for _, bad := range []string{"", "{", `{"offsetTable":{1:}}`, "\x00\x00"} {
		if err := configfile.Decode([]byte(bad), &got); !errors.Is(err, configfile.ErrCorrupt) {
			t.Errorf("Decode(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestQuoteBareKeysLeavesValuesAlone(t *testing.T) {
	// Negative values, array elements (followed by ',' or ']', not ':'),
	// an escaped backslash closing a string, and a key that is not a
	// plain integer are left alone.
	cases := map[string]string{
		`{"a":-5,"b":[-1,2],"c":{-2:[3,-4]}}`: `{"a":-5,"b":[-1,2],"c":{"-2":[3,-4]}}`,
		`{"s":"0:1","t":{"u":"\\"}, 9:1}`:     `{"s":"0:1","t":{"u":"\\"}, "9":1}`,
		`{1e3:1}`:                             `{1e3:1}`,
	}
	for in, want := range cases {
		if got := string(configfile.QuoteBareKeys([]byte(in))); got != want {
			t.Errorf("QuoteBareKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

func write(t *testing.T, fs backend.FS, n string, data []byte) {
	t.Helper()
	fs.MkdirAll("config")
	seg, err := fs.Create(n, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	seg.WriteAt(data, 0)
	if err := seg.Sync(0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	seg.Close()
}

func TestLoadFallback(t *testing.T) {
	good := []byte(`{"offsetTable":{"T@G":{0:1}},"name":"main"}`)
	bak := []byte(`{"offsetTable":{"T@G":{0:2}},"name":"bak"}`)
	corrupt := []byte(`{"offsetTable":{"T@G":{0:`)
	cases := []struct {
		name      string
		main, bak []byte // nil: file absent
		want      configfile.Source
		wantName  string
		corrupt   bool
		mainErr   bool
	}{
		{"neither", nil, nil, configfile.Missing, "", false, false},
		{"main only", good, nil, configfile.Main, "main", false, false},
		{"main wins over bak", good, bak, configfile.Main, "main", false, false},
		{"main missing", nil, bak, configfile.Backup, "bak", false, false},
		{"main empty", []byte{}, bak, configfile.Backup, "bak", false, true},
		{"main empty, no bak", []byte{}, nil, configfile.Missing, "", false, true},
		{"bak null", corrupt, []byte("null"), configfile.Missing, "", true, true},
		{"main corrupt", corrupt, bak, configfile.Backup, "bak", false, true},
		{"main corrupt, no bak", corrupt, nil, configfile.Missing, "", true, true},
		{"main corrupt, bak empty", corrupt, []byte{}, configfile.Missing, "", true, true},
		{"both corrupt", corrupt, []byte("}}"), configfile.Missing, "", true, true},
		{"main missing, bak corrupt", nil, corrupt, configfile.Missing, "", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := memfs.New(nil)
			if c.main != nil {
				write(t, fs, name, c.main)
			}
			if c.bak != nil {
				write(t, fs, name+backend.BackupSuffix, c.bak)
			}
			var got table
			src, mainErr, err := configfile.Load(fs, name, &got)
			if c.corrupt != errors.Is(err, configfile.ErrCorrupt) || (!c.corrupt && err != nil) {
				t.Fatalf("err %v, corrupt wanted: %v", err, c.corrupt)
			}
			if src != c.want || got.Name != c.wantName || (mainErr != nil) != c.mainErr {
				t.Fatalf("source %v name %q mainErr %v; want %v %q %v", src, got.Name, mainErr, c.want, c.wantName, c.mainErr)
			}
			// Load never writes.
			for n, want := range map[string][]byte{name: c.main, name + backend.BackupSuffix: c.bak} {
				data, err := backend.ReadFile(fs, n)
				if want == nil && !errors.Is(err, backend.ErrNotExist) || want != nil && string(data) != string(want) {
					t.Fatalf("%s changed: %q %v", n, data, err)
				}
			}
		})
	}
}

func TestSaveRoundTripAndBackup(t *testing.T) {
	afs := afero.NewMemMapFs()
	fs := memfs.New(afs)
	for i := int64(1); i <= 3; i++ {
		if err := configfile.Save(fs, name, v(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A power cut after Save returned keeps the new content: memfs.New on
	// the same afero.Fs holds only what was synced.
	fs = memfs.New(afs)
	var got table
	if src, _, err := configfile.Load(fs, name, &got); err != nil || src != configfile.Main || got.Name != "v3" || got.OffsetTable["T@G"][-1] != -3 {
		t.Fatalf("%v %+v %v", src, got, err)
	}
	var prev table
	data, _ := backend.ReadBackup(fs, name)
	if err := configfile.Decode(data, &prev); err != nil || prev.Name != "v2" {
		t.Fatalf(".bak holds %q: %v", data, err)
	}
	// Standard JSON out: quoted keys.
	data, _ = backend.ReadFile(fs, name)
	if err := configfile.Decode(data, &got); err != nil || string(configfile.QuoteBareKeys(data)) != string(data) {
		t.Fatalf("not standard JSON: %s", data)
	}
}

// TestSaveCrashSafe cuts the power at every operation of a Save, with
// every unsynced page and pending directory operation randomly kept,
// lost or torn: the file loads as the old or the new version, never
// fails and never comes back empty.
func TestSaveCrashSafe(t *testing.T) {
	base := afero.NewMemMapFs()
	seed := memfs.New(base)
	if err := configfile.Save(seed, name, v(1)); err != nil {
		t.Fatal(err)
	}
	if err := configfile.Save(seed, name, v(2)); err != nil { // a .bak exists too
		t.Fatal(err)
	}
	for k := 1; ; k++ {
		done := false
		for s := uint64(0); s < 8; s++ {
			cfs, err := crashsim.New(base, crashsim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfs.SetInjector(crashsim.CrashWhen(crashsim.Nth(k, crashsim.Mutating())))
			err = configfile.Save(cfs, name, v(3))
			done = err == nil
			img := cfs.Crash(crashsim.NewRandomChooser(s, 50, 20))
			var got table
			src, _, err := configfile.Load(memfs.New(img), name, &got)
			if err != nil || (got.Name != "v2" && got.Name != "v3") {
				t.Fatalf("crash at mutating op %d (seed %d): %v %v %+v", k, s, src, err, got)
			}
			if done && got.Name != "v3" {
				t.Fatalf("Save returned but a crash after it loads %s", got.Name)
			}
		}
		if done {
			if k < 3 {
				t.Fatalf("Save finished after only %d mutating operations", k)
			}
			return
		}
	}
}

// TestLoadLoggedNeverSilent: every fallback to the
// backup is logged, at ERROR when the main file was garbage or empty.
func TestLoadLoggedNeverSilent(t *testing.T) {
	good := []byte(`{"offsetTable":{"T@G":{0:2}},"name":"bak"}`)
	for _, c := range []struct {
		name  string
		main  []byte
		level string
	}{
		{"garbage", []byte("garbage"), "level=ERROR"},
		{"empty", []byte{}, "level=ERROR"},
		{"missing", nil, "level=WARN"},
	} {
		fs := memfs.New(nil)
		if c.main != nil {
			write(t, fs, name, c.main)
		}
		write(t, fs, name+backend.BackupSuffix, good)
		var logs bytes.Buffer
		var got table
		src, err := configfile.LoadLogged(fs, name, &got, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil || src != configfile.Backup || got.Name != "bak" {
			t.Fatalf("%s: %v %v %+v", c.name, src, err, got)
		}
		if !strings.Contains(logs.String(), c.level) || !strings.Contains(logs.String(), name) {
			t.Fatalf("%s: fallback not logged at %s: %q", c.name, c.level, logs.String())
		}
	}
}
