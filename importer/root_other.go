//go:build !unix

package importer

import (
	"os"
	"path/filepath"
)

// oNonblock is 0 where there are no FIFOs to wait on.
const oNonblock = 0

// openNoFollow opens rel through os.Root (which keeps it inside the
// root), after the check that no element of it is a symbolic link; on
// these systems a link swapped in between the two may be followed, but
// never out of the root.
func (rt *root) openNoFollow(rel string) (*os.File, error) {
	return rt.r.OpenFile(filepath.Clean(rel), os.O_RDONLY, 0)
}
