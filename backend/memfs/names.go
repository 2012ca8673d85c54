package memfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

var (
	errIsDir    = errors.New("is a directory")
	errNotDir   = errors.New("not a directory")
	errNotEmpty = errors.New("directory not empty")
)

// clean turns a backend name into the canonical slash path used as a key in
// the FS tables: relative to the root, without "." or ".." elements, "." for
// the root itself. Rooting the name before cleaning keeps ".." from
// escaping the FS.
func clean(name string) string {
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if p == "" {
		return "."
	}
	return p
}

// native converts a canonical name to the form afero expects.
func native(p string) string { return filepath.FromSlash(p) }

// within reports whether p is dir or lies below it.
func within(dir, p string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// pathErr wraps err with the operation and the caller's name. It drops the
// wrappers that afero and the os package add, whose paths may be the
// absolute paths below a BasePathFs rather than the names the caller used.
func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: cause(err)}
}

// cause strips path and syscall wrappers from err, keeping the innermost
// error (such as fs.ErrNotExist or an errno) that errors.Is tests.
func cause(err error) error {
	for {
		switch e := err.(type) {
		case *fs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		default:
			return err
		}
	}
}
