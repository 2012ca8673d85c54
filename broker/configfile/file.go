package configfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/rocketstore/rocketstore/backend"
)

// ErrCorrupt reports a config file, and its backup, that cannot be decoded.
var ErrCorrupt = errors.New("configfile: corrupt config file")

// Source says where Load found the content.
type Source int

const (
	// Missing: neither name nor name.bak exists (a fresh broker); v is
	// untouched.
	Missing Source = iota
	// Main: name was decoded.
	Main
	// Backup: name was missing, empty or corrupt, and name.bak was decoded.
	Backup
)

// String names the source for logs.
func (s Source) String() string {
	switch s {
	case Main:
		return "main"
	case Backup:
		return "backup"
	}
	return "missing"
}

// Load decodes the JSON file name (or name.bak, see the package doc) into
// v. mainErr, set when the main file was corrupt and another source was used, is
// returned as the second result for logging.
func Load(fs backend.FS, name string, v any) (src Source, mainErr error, err error) {
	data, err := backend.ReadFile(fs, name)
	switch {
	case err == nil && len(data) > 0:
		if mainErr = Decode(data, v); mainErr == nil {
			return Main, nil, nil
		}
		mainErr = fmt.Errorf("%s: %w", name, mainErr)
	case err != nil && !errors.Is(err, backend.ErrNotExist):
		return Missing, nil, fmt.Errorf("configfile: read %s: %w", name, err)
	}
	bak, berr := backend.ReadBackup(fs, name)
	switch {
	case errors.Is(berr, backend.ErrNotExist) && mainErr == nil:
		return Missing, nil, nil
	case errors.Is(berr, backend.ErrNotExist):
		return Missing, mainErr, fmt.Errorf("%w: %w; no %s%s", ErrCorrupt, mainErr, name, backend.BackupSuffix)
	case berr != nil:
		return Missing, mainErr, fmt.Errorf("configfile: read %s%s: %w", name, backend.BackupSuffix, berr)
	}
	if derr := Decode(bak, v); derr != nil {
		return Missing, mainErr, fmt.Errorf("%w: %s%s: %w (main: %w)", ErrCorrupt, name, backend.BackupSuffix, derr, mainErr)
	}
	return Backup, mainErr, nil
}

// Decode decodes RocketMQ-style JSON (bare integer keys allowed) into v.
func Decode(data []byte, v any) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if err := json.Unmarshal(QuoteBareKeys(data), v); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// Save encodes v as indented standard JSON and replaces name with it
// crash-safely, creating name's directory if needed.
func Save(fs backend.FS, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return fmt.Errorf("configfile: encode %s: %w", name, err)
	}
	if dir := path.Dir(name); dir != "." {
		if err := fs.MkdirAll(dir); err != nil {
			return fmt.Errorf("configfile: mkdir %s: %w", dir, err)
		}
	}
	if err := backend.WriteFileAtomic(fs, name, data); err != nil {
		return fmt.Errorf("configfile: write %s: %w", name, err)
	}
	return nil
}
