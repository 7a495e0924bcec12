// Package diskfree tells how much space a file system has left for an
// unprivileged writer.
package diskfree

import "errors"

// ErrUnsupported means the platform does not tell.
var ErrUnsupported = errors.New("free disk space: not known on this platform")
