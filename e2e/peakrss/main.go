// Command peakrss runs a command and writes its peak resident memory, in
// KiB, to file descriptor 3; it exits with the command's exit code.
//
// The e2e benches measure halu's memory through it because a process's
// peak as the kernel reports it to its parent (ru_maxrss) is at least the
// parent's own resident memory when it started the process: Go starts a
// child with vfork (the parent's memory shared until exec), and Linux
// carries the shared memory's high-water mark into the child's. A test
// process holding hundreds of MiB (an in-process fake server, a run read
// back) would floor every figure at its own size; this small process
// floors them at its own few MiB instead.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakrss CMD [ARG...] (the peak goes to fd 3)")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(125)
	}
	out := os.NewFile(3, "peak")
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if out == nil || !ok {
		fmt.Fprintln(os.Stderr, "peakrss: no fd 3 or no rusage")
		os.Exit(125)
	}
	fmt.Fprintf(out, "%d\n", ru.Maxrss)
	os.Exit(code)
}
