package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/pipeline"
)

func newPipeline() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{Use: "pipeline", Short: "Read or set the checked steps of the domain pipeline"}
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the steps in order, which are checked, and their settings",
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := cf.token()
			if err != nil {
				return err
			}
			var cfg pipeline.Config
			if err := httpapi.NewClient(cf.controller, tok).Do(cmd.Context(), http.MethodGet, "/api/pipeline", nil, &cfg); err != nil {
				return err
			}
			printPipeline(cmd, &cfg)
			return nil
		},
	}
	set := &cobra.Command{
		Use:   "set STEP,STEP...",
		Short: "Check exactly these steps (in canonical order: " + strings.Join(pipeline.Steps, ",") + ")",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := cf.token()
			if err != nil {
				return err
			}
			c := httpapi.NewClient(cf.controller, tok)
			var cfg pipeline.Config
			if err := c.Do(cmd.Context(), http.MethodGet, "/api/pipeline", nil, &cfg); err != nil {
				return err
			}
			want := map[string]bool{}
			for _, s := range strings.Split(args[0], ",") {
				s = strings.TrimSpace(s)
				if s == "" {
					continue
				}
				if _, ok := pipeline.Labels[s]; !ok {
					return fmt.Errorf("%q is not a step; steps are %s", s, strings.Join(pipeline.Steps, ","))
				}
				want[s] = true
			}
			for i := range cfg.Steps {
				cfg.Steps[i].Enabled = want[cfg.Steps[i].Name]
			}
			var out pipeline.Config
			if err := c.Do(cmd.Context(), http.MethodPut, "/api/pipeline", cfg, &out); err != nil {
				return err
			}
			printPipeline(cmd, &out)
			return nil
		},
	}
	for _, c := range []*cobra.Command{get, set} {
		cf.register(c.Flags())
		usageEnv(c.Flags())
	}
	cmd.AddCommand(get, set)
	return cmd
}

func printPipeline(cmd *cobra.Command, cfg *pipeline.Config) {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tSTEP\tLABEL\tATTEMPTS\tLEASE\tRATE/MIN\tON REJECT\tRULES")
	for _, s := range cfg.Steps {
		box := "[ ]"
		if s.Enabled {
			box = "[x]"
		}
		rules, _ := json.Marshal(s.Rules)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%dms\t%d\t%s\t%s\n", box, s.Name, s.Label, s.MaxAttempts, s.LeaseTTLMs, s.RatePerMin, s.OnReject, rules)
	}
	_ = tw.Flush()
	fmt.Fprintf(cmd.OutOrStdout(), "version %d\n", cfg.Version)
}
