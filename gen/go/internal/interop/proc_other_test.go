//go:build !linux

package interop

import "syscall"

// stopWithParent: only Linux can tie a child's life to its parent's; elsewhere TestMain stops it.
func stopWithParent() *syscall.SysProcAttr { return nil }
