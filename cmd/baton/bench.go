package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	var cpuProfile string
	var stopProfile func()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run Baton's own benchmarks (each starts its own controller in-process)",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if cpuProfile == "" {
				return nil
			}
			f, err := os.Create(cpuProfile)
			if err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			stopProfile = func() { pprof.StopCPUProfile(); _ = f.Close() }
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if stopProfile != nil {
				stopProfile()
			}
		},
	}
	cmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (controller, workers, clients) to this file")
	cmd.AddCommand(newBenchQueue(), newBenchPipeline())
	cmd.AddCommand(newBenchPDF())
	return cmd
}
