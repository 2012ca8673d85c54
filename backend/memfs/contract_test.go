package memfs_test

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/backendtest"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

func TestContract(t *testing.T) {
	t.Run("MemMapFs", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backend.FS { return memfs.New(nil) })
	})
	t.Run("OsFs", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backend.FS {
			return memfs.New(afero.NewBasePathFs(afero.NewOsFs(), t.TempDir()))
		})
	})
}
