package acl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ErrNoAccount reports a deletion of an access key the file does not have.
var ErrNoAccount = errors.New("acl: no such account")

// AccountUpdate is UPDATE_AND_CREATE_ACL_CONFIG's header: AccessKey and
// SecretKey are required; a nil field keeps the existing account's value
// (or is absent for a new account), as RocketMQ's createAclAccessConfigMap.
type AccountUpdate struct {
	AccessKey, SecretKey               string
	WhiteRemoteAddress                 *string
	Admin                              bool
	DefaultTopicPerm, DefaultGroupPerm *string
	TopicPerms, GroupPerms             []string
	SetTopicPerms, SetGroupPerms       bool
}

// String describes u without its secret key.
func (u AccountUpdate) String() string {
	return fmt.Sprintf("{accessKey:%s admin:%v}", u.AccessKey, u.Admin)
}

// UpdateAccount creates or changes an account in the file (code 50).
func (v *Validator) UpdateAccount(u AccountUpdate) error {
	return v.mutate(func(f *File) error {
		i := slices.IndexFunc(f.Accounts, func(a Account) bool { return string(a.AccessKey) == u.AccessKey })
		if i < 0 {
			f.Accounts = append(f.Accounts, Account{AccessKey: Scalar(u.AccessKey)})
			i = len(f.Accounts) - 1
		}
		a := &f.Accounts[i]
		a.SecretKey, a.Admin = Scalar(u.SecretKey), u.Admin
		if u.WhiteRemoteAddress != nil {
			a.WhiteRemoteAddress = Scalar(*u.WhiteRemoteAddress)
		}
		if u.DefaultTopicPerm != nil {
			a.DefaultTopicPerm = *u.DefaultTopicPerm
		}
		if u.DefaultGroupPerm != nil {
			a.DefaultGroupPerm = *u.DefaultGroupPerm
		}
		if u.SetTopicPerms {
			a.TopicPerms = u.TopicPerms
		}
		if u.SetGroupPerms {
			a.GroupPerms = u.GroupPerms
		}
		return nil
	})
}

// DeleteAccount removes an account from the file (code 51).
func (v *Validator) DeleteAccount(accessKey string) error {
	return v.mutate(func(f *File) error {
		i := slices.IndexFunc(f.Accounts, func(a Account) bool { return string(a.AccessKey) == accessKey })
		if i < 0 {
			return fmt.Errorf("%w: accessKey=%s", ErrNoAccount, accessKey)
		}
		f.Accounts = slices.Delete(f.Accounts, i, i+1)
		return nil
	})
}

// UpdateGlobalWhiteAddrs replaces globalWhiteRemoteAddresses (code 53).
func (v *Validator) UpdateGlobalWhiteAddrs(addrs []string) error {
	return v.mutate(func(f *File) error {
		f.GlobalWhiteRemoteAddresses = addrs
		return nil
	})
}

// Snapshot returns the rules file as last loaded from disk, with every
// secret key replaced by "******", and its data version (codes 52, 54).
func (v *Validator) Snapshot() (*File, DataVersion, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := readFile(v.cfg.File)
	if err != nil {
		return nil, DataVersion{}, err
	}
	f, r, err := parseAndCompile(data)
	if err != nil {
		return nil, DataVersion{}, fmt.Errorf("%s: %w", v.cfg.File, err)
	}
	for i := range f.Accounts {
		f.Accounts[i].SecretKey = "******"
	}
	return f, r.version, nil
}

// mutate applies change to the file on disk and installs the result: the
// file is read and parsed (a broken file is not overwritten), changed, its
// dataVersion bumped, checked, written to a temporary file, synced and
// renamed over the old one.
func (v *Validator) mutate(change func(*File) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := readFile(v.cfg.File)
	if err != nil {
		return err
	}
	f, _, err := parseAndCompile(data)
	if err != nil {
		return fmt.Errorf("%s: %w (fix the file first)", v.cfg.File, err)
	}
	if err := change(f); err != nil {
		return err
	}
	dv := DataVersion{}
	if len(f.DataVersion) > 0 {
		dv = f.DataVersion[0]
	}
	dv.Counter++
	dv.Timestamp = time.Now().UnixMilli()
	f.DataVersion = []DataVersion{dv}
	r, err := compile(f)
	if err != nil {
		return err
	}
	out, err := f.Marshal()
	if err != nil {
		return err
	}
	if err := writeAtomic(v.cfg.File, out); err != nil {
		return err
	}
	v.rules.Store(r)
	v.lastSum = sha256.Sum256(out)
	v.log.Info("acl: rules updated by an admin request", "file", v.cfg.File, "accounts", len(r.accounts), "dataVersion", dv.Counter)
	return nil
}

// writeAtomic replaces path with data: a reader (or a crash) sees the
// old file or the new one, never a torn one.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".plain_acl-*.yml")
	if err != nil {
		return fmt.Errorf("acl: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("acl: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("acl: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("acl: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("acl: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("acl: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
