package engine

import (
	"log/slog"
	"path"
	"strings"

	"github.com/rocketstore/rocketstore/backend"
)

// listQueueFiles lists the files of a queue directory (the CommitLog's or
// one ConsumeQueue's) that the store writes there: segments, named by the
// 20-digit offset of their first byte, and the padding copies of a short
// last segment. Any other name is left alone with a warning rather than
// taken for a segment: file systems leave names of their own beside the
// store's. FUSE renames a file unlinked while open to .fuse_hidden<N> and
// NFS to .nfs<N>, and a crash keeps them; a backup or an editor may leave
// more. Such a file is not the store's to read or delete.
func listQueueFiles(fs backend.FS, dir string, log *slog.Logger) ([]string, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	kept := names[:0]
	for _, n := range names {
		if isSegmentName(strings.TrimSuffix(n, padSuffix)) {
			kept = append(kept, n)
			continue
		}
		log.Warn("ignoring a file the store does not write (left by the file system, a crash or a person?)",
			"file", path.Join(dir, n))
	}
	return kept, nil
}

// isSegmentName reports whether name is a segment name: exactly
// fileNameDigits ASCII digits.
func isSegmentName(name string) bool {
	if len(name) != fileNameDigits {
		return false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}
