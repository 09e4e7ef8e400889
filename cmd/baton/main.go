// Command baton is Baton's single binary: the controller (serve), remote
// workers (worker), client commands (status, domains, pipeline, pdf) and
// the benchmarks (bench). cmd/baton only wires flags to packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	baton "github.com/batonhq/baton"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	if err := root.ExecuteContext(ctx); err != nil {
		var be *baton.Error
		if errors.As(err, &be) {
			fmt.Fprintf(os.Stderr, "baton: %s\n", be.Message)
		} else {
			fmt.Fprintf(os.Stderr, "baton: %v\n", err)
		}
		os.Exit(1)
	}
}
