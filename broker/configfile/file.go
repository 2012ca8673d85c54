package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	return load(fs, name, v)
}

// LoadLogged is Load that reports every fallback on log (a fallback is
// never silent): at ERROR when the backup is used because the
// main file was corrupt or empty (the backup may be older, so settings or
// offsets go back), at WARN when the main file is missing (a crash during
// Save) or empty with no backup.
func LoadLogged(fs backend.FS, name string, v any, log *slog.Logger) (Source, error) {
	src, mainErr, err := load(fs, name, v)
	switch {
	case err != nil:
	case src == Backup && mainErr != nil:
		log.Error("config file unusable; loaded its backup, which may be older (settings or offsets may go back)",
			"file", name, "backup", name+backend.BackupSuffix, "err", mainErr)
	case src == Backup:
		log.Warn("config file missing; loaded its backup (a crash during a save)", "file", name)
	case mainErr != nil:
		log.Warn("config file empty and no backup; starting without its settings", "file", name, "err", mainErr)
	}
	return src, err
}

func load(fs backend.FS, name string, v any) (src Source, mainErr error, err error) {
	data, err := backend.ReadFile(fs, name)
	switch {
	case err == nil && len(data) > 0:
		if mainErr = Decode(data, v); mainErr == nil {
			return Main, nil, nil
		}
		mainErr = fmt.Errorf("%s: %w", name, mainErr)
	case err == nil:
		// An empty main file is not "no settings": the backup is older
		// and loading it must be reported, not taken silently.
		mainErr = fmt.Errorf("%w: %s is empty", ErrCorrupt, name)
	case !errors.Is(err, backend.ErrNotExist):
		return Missing, nil, fmt.Errorf("configfile: read %s: %w", name, err)
	}
	bak, berr := backend.ReadBackup(fs, name)
	switch {
	case errors.Is(berr, backend.ErrNotExist) && mainErr == nil:
		return Missing, nil, nil
	case errors.Is(berr, backend.ErrNotExist) && len(data) == 0:
		return Missing, mainErr, nil // empty, nothing else: no settings
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
	if t := bytes.TrimSpace(data); bytes.Equal(t, []byte("null")) || len(t) == 0 || t[0] != '{' {
		// RocketMQ's config files are JSON objects; `null` would decode
		// as "no settings" and wipe them.
		return fmt.Errorf("%w: not a JSON object", ErrCorrupt)
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
		// A directory's own entry is durable only once its parent is
		// synced; WriteFileAtomic syncs only the directory itself. Without
		// this a power cut could drop config/ with every file saved in it
		// (consumer offsets back to nothing). The directory may
		// also be one a killed process created, so this is not only done
		// when MkdirAll created it; a directory sync costs little next to
		// the file sync of every save.
		for d := dir; d != "."; {
			d = path.Dir(d)
			if err := fs.SyncDir(d); err != nil {
				return fmt.Errorf("configfile: sync dir %s: %w", d, err)
			}
		}
	}
	if err := backend.WriteFileAtomic(fs, name, data); err != nil {
		return fmt.Errorf("configfile: write %s: %w", name, err)
	}
	return nil
}
