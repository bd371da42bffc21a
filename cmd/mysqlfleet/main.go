// Command mysqlfleet registers member clusters with a mysqlfleet hub and shows the fleet. Installed as
// kubectl-mysqlfleet on the PATH, it is also `kubectl mysqlfleet`. The commands are wired here; what they do is
// in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := newRootCommand(filepath.Base(os.Args[0]), streams).ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(1)
	}
}
