package crashsim

import "fmt"

// dirOpKind is a directory operation that a crash may or may not keep.
type dirOpKind int

const (
	dirCreate dirOpKind = iota
	dirRemove
	dirRename
	dirMkdir
	dirRmdir
)

var dirOpNames = [...]string{"create", "remove", "rename", "mkdir", "rmdir"}

// dirOp is one pending directory operation. ino is the file it concerns
// (nil for directories), so that a remove or rename applied to a durable
// namespace only ever affects the file it affected when it ran.
type dirOp struct {
	kind     dirOpKind
	path, to string
	ino      *inode
}

func (o dirOp) String() string {
	if o.kind == dirRename {
		return fmt.Sprintf("rename %s -> %s", o.path, o.to)
	}
	return fmt.Sprintf("%s %s", dirOpNames[o.kind], o.path)
}

// touches reports whether SyncDir(dir) makes o durable: o changes an entry
// of dir. A rename between directories becomes durable with either.
func (o dirOp) touches(dir string) bool {
	return parent(o.path) == dir || (o.kind == dirRename && parent(o.to) == dir)
}

// namespace is a durable set of names: files (by inode) and directories.
type namespace struct {
	files map[string]*inode
	dirs  map[string]bool
}

func (ns namespace) clone() namespace {
	return namespace{files: cloneMap(ns.files), dirs: cloneMap(ns.dirs)}
}

// apply performs o on ns. A remove or rename whose file is not (or no
// longer) under its name does nothing: its effect depends on an earlier
// operation that this namespace did not keep.
func (ns namespace) apply(o dirOp) {
	switch o.kind {
	case dirCreate:
		ns.files[o.path] = o.ino
	case dirRemove:
		if ns.files[o.path] == o.ino {
			delete(ns.files, o.path)
		}
	case dirRename:
		if ns.files[o.path] == o.ino {
			delete(ns.files, o.path)
			ns.files[o.to] = o.ino
		}
	case dirMkdir:
		ns.dirs[o.path] = true
	case dirRmdir:
		delete(ns.dirs, o.path)
	}
}

// prune drops the entries whose directory is missing: a name survives only
// if its whole path does.
func (ns namespace) prune() {
	for _, d := range sortedKeys(ns.dirs) { // parents sort before children
		if d != "." && !ns.dirs[parent(d)] {
			delete(ns.dirs, d)
		}
	}
	for p := range ns.files {
		if !ns.dirs[parent(p)] {
			delete(ns.files, p)
		}
	}
	ns.dirs["."] = true
}
