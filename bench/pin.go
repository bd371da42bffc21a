package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// -pin-tiers (scale profile): the hub's control plane and the manager run on CPU 0, the members' control planes and
// the bench itself on CPU 1, as a hub on machines of its own would not take its CPU from the members'. Without it
// every process shares both cores, and whatever the hub tier uses is CPU the members' API servers do not get. It
// is an experiment, not the recorded profile: one core serves 10 members' control planes (their idle load is a
// third of a core), not 30 (most of one).

// pinCPU is the CPU a tier runs on with -pin-tiers.
const (
	pinHubCPU     = 0
	pinMembersCPU = 1
)

// pinProcess sets the CPU affinity of every thread of a process to cpu. A thread takes its creator's affinity, so
// threads made later stay there; one made while the threads are set is caught by a second pass.
func pinProcess(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	pinned := map[int]bool{}
	for range 2 {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pinning thread %d of process %d to CPU %d: %w", tid, pid, cpu, err)
			}
			pinned[tid] = true
		}
	}
	return nil
}

// pinProcessesIn pins the processes whose command line names a file in dir (a cluster's kube-apiserver and etcd)
// to cpu, and reports how many it pinned.
func pinProcessesIn(dir string, cpu int) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir+"/") {
			continue
		}
		if err := pinProcess(pid, cpu); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
