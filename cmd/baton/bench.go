package main

import (
	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run Baton's own benchmarks (each starts its own controller in-process)",
	}
	cmd.AddCommand(newBenchQueue())
	return cmd
}
