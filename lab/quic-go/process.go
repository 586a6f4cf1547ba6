package main

// Child-process setup, as crates/quark-lab/src/child/mod.rs does it for the
// Rust children: die with the orchestrator, optionally pin to one CPU, size
// the runtime.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// parentEnv carries the orchestrator's pid to its children.
const parentEnv = "QUARK_LAB_PARENT"

// setup prepares this process; procs is the number of threads that may run
// Go code at once (GOMAXPROCS).
func setup(c common, procs int) error {
	// Ask the kernel to kill us when the orchestrator dies. The setting
	// belongs to the calling thread, which lives as long as the process:
	// Go ends a thread only when a goroutine locked to it exits, and this
	// program locks none.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", err)
	}
	// The orchestrator may have died before the call above took effect.
	if p, err := strconv.Atoi(os.Getenv(parentEnv)); err == nil && os.Getppid() != p {
		return fmt.Errorf("orchestrator %d is gone", p)
	}
	if c.busyPoll {
		// The Rust children keep their runtime from sleeping; Go's scheduler
		// has no such mode, and quic-go none of its own: measuring without
		// would compare unlike things.
		return errors.New("--busy-poll: quic-go and Go's scheduler have no busy-polling mode")
	}
	// quark's switch for tests without UDP GSO (any value but 0), passed on
	// in quic-go's words.
	if v, ok := os.LookupEnv("QUARK_NO_GSO"); ok && v != "0" {
		os.Setenv("QUIC_GO_DISABLE_GSO", "true")
	}
	// --threads 1 gives the Rust children a single-threaded runtime: here one
	// thread runs Go code at a time (blocking system calls and the kernel's
	// work aside, as there).
	runtime.GOMAXPROCS(max(procs, 1))
	if c.cpu >= 0 {
		return pinToCPU(c.cpu)
	}
	return nil
}

// pinToCPU pins every thread of this process to one CPU. The affinity mask
// is per thread and the Go runtime has started several already; threads it
// starts later inherit the mask of the thread that starts them. So pin each
// thread, and look again until no new one appeared meanwhile.
func pinToCPU(cpu int) error {
	var set unix.CPUSet
	if cpu >= len(set)*64 {
		return fmt.Errorf("cannot pin to CPU %d: no such CPU", cpu)
	}
	set.Set(cpu)
	done := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("cannot pin to CPU %d: %w", cpu, err)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh, done[tid] = true, true
			err = unix.SchedSetaffinity(tid, &set)
			if err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: the thread ended
				return fmt.Errorf("cannot pin to CPU %d: %w", cpu, err)
			}
		}
		if !fresh {
			return nil
		}
	}
}
