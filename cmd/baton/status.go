package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/httpapi"
)

func newStatus() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show queues, running tasks and workers",
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := cf.token()
			if err != nil {
				return err
			}
			c := httpapi.NewClient(cf.controller, tok)
			ctx := cmd.Context()
			qs, err := c.Queues(ctx)
			if err != nil {
				return err
			}
			ws, err := c.Workers(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "QUEUE\tREADY\tRUNNING\tRETRY\tDEAD\tOLDEST\tRATE/MIN\tPAUSED\t")
			var tr, tq, tt, td int64
			for _, q := range qs {
				rate := "-"
				if q.RatePerMin > 0 {
					rate = fmt.Sprint(q.RatePerMin)
				}
				paused := ""
				if q.Paused {
					paused = "paused"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", q.Name, q.Ready, q.Running, q.Retry, q.Dead,
					age(time.Duration(q.OldestAgeMs)*time.Millisecond), rate, paused)
				tr, tq, tt, td = tr+q.Ready, tq+q.Running, tt+q.Retry, td+q.Dead
			}
			fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t\t\t\t\n", tr, tq, tt, td)
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(out)
			tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKER\tNAME\tRUNNING\tLAST SEEN\tTYPES")
			for _, w := range ws {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s ago\t%s\n", w.ID, w.Name, w.Running, age(time.Since(w.LastSeen)), strings.Join(w.Types, ","))
			}
			if len(ws) == 0 {
				fmt.Fprintln(tw, "(no worker seen in the last 24h)\t\t\t\t")
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return printFunnel(cmd, c)
		},
	}
	cf.register(cmd.Flags())
	usageEnv(cmd.Flags())
	return cmd
}

func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// printFunnel shows how many domains reached and passed each step, and the
// open operator alerts.
func printFunnel(cmd *cobra.Command, c *httpapi.Client) error {
	var f struct {
		Steps []struct {
			Step     string `json:"step"`
			Label    string `json:"label"`
			Enabled  bool   `json:"enabled"`
			Reached  int64  `json:"reached"`
			Passed   int64  `json:"passed"`
			Rejected int64  `json:"rejected"`
			BlackHit int64  `json:"blackHit"`
			Failed   int64  `json:"failed"`
		} `json:"steps"`
	}
	if err := c.Do(cmd.Context(), "GET", "/api/pipeline/funnel", nil, &f); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "STEP\tCHECKED\tREACHED\tPASSED\tREJECTED\tBLACK_HIT\tFAILED\t")
	for _, s := range f.Steps {
		on := ""
		if s.Enabled {
			on = "x"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", s.Step, on, s.Reached, s.Passed, s.Rejected, s.BlackHit, s.Failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var al struct {
		Alerts []struct {
			Code, Message, Step string
			Count               int64
		} `json:"alerts"`
	}
	if err := c.Do(cmd.Context(), "GET", "/api/alerts", nil, &al); err != nil {
		return err
	}
	for _, a := range al.Alerts {
		fmt.Fprintf(out, "ALERT %s (%s, %d times): %s\n", a.Code, a.Step, a.Count, a.Message)
	}
	return nil
}
