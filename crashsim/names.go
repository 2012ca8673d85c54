package crashsim

import (
	"path"
	"strings"
)

// clean turns a backend name into a canonical slash path relative to the
// root ("." for the root), so that ".." never escapes it.
func clean(name string) string {
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if p == "" {
		return "."
	}
	return p
}

// parent returns the directory holding p.
func parent(p string) string { return path.Dir(p) }

// within reports whether p is dir or lies below it.
func within(dir, p string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}
