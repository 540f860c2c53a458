package interop

import "syscall"

// stopWithParent makes the kernel kill the server if the test process dies first (e.g. on a test
// timeout, when TestMain's cleanup does not run).
func stopWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
