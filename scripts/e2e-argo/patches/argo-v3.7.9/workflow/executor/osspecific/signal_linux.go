// edgebench e2e build patch: the github.com/argoproj/argo-workflows/v3@v3.7.9 module as served by the Go module
// proxy has no Linux variant of this file: upstream signal_linux.go is a symlink to signal_darwin.go, and module
// zips leave symlinks out, so cmd/argoexec does not compile for Linux
// ("undefined: Setpgid"). This supplies the four functions the executor calls, with the Unix semantics the darwin
// variant documents: signals go to the child's process group, the child is reaped by polling wait4.
package osspecific

import (
	"os"
	"syscall"
	"time"

	"github.com/argoproj/argo-workflows/v3/util/errors"
)

// Term is the signal a graceful stop sends.
var Term = syscall.SIGTERM

// CanIgnoreSignal: signals that are not forwarded to the child.
func CanIgnoreSignal(s os.Signal) bool {
	switch s {
	case syscall.SIGCHLD, syscall.SIGURG:
		return true
	}
	return false
}

// Setpgid makes the child the leader of a new process group.
func Setpgid(attr *syscall.SysProcAttr) { attr.Setpgid = true }

// Kill signals the child's whole process group, or the child alone when its group is unknown.
func Kill(pid int, sig syscall.Signal) error {
	if group, err := syscall.Getpgid(pid); err == nil {
		return syscall.Kill(-group, sig)
	}
	return syscall.Kill(pid, sig)
}

// Wait releases the child and reaps it (and any other exited descendant) until the child itself has exited;
// its exit status becomes an ExitErr as the other platforms report it.
func Wait(p *os.Process) error {
	child := p.Pid
	if err := p.Release(); err != nil {
		return err
	}
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err != nil {
			return err
		}
		if pid == child {
			switch {
			case status.Exited():
				return errors.NewExitErr(status.ExitStatus())
			case status.Signaled():
				return errors.NewExitErr(128 + int(status.Signal()))
			}
		}
		if pid <= 0 {
			time.Sleep(time.Second)
		}
	}
}
