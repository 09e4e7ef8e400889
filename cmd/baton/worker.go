package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/worker"
)

func newWorker() *cobra.Command {
	var (
		controllerURL, token, types, name, id string
		concurrency                           int
		grace, claimWait                      time.Duration
		logLevel, logFormat                   string
		providers, egressAllow                string
		checkTimeout                          time.Duration
		pdfCfg                                app.PDFConfig
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a remote worker that pulls tasks from a controller",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel, logFormat)
			if err != nil {
				return err
			}
			if token == "" {
				return fmt.Errorf("no worker token: pass --worker-token or set BATON_WORKER_TOKEN (baton serve prints it)")
			}
			reg := app.Builtins()
			words := wordlist.NewStore(wordlist.Default())
			checkers, err := app.RemoteChecks(providers, egressAllow, checkTimeout, words, log)
			if err != nil {
				return err
			}
			pipeline.RegisterChecks(reg, checkers...)
			api := httpapi.NewClient(controllerURL, token)
			go app.FollowWordLists(cmd.Context(), api, words, time.Minute, log)
			// pdf.render: its own browsers and egress proxy, PDFs uploaded
			// through the artifact route under the lease token.
			pdfR, err := app.RemotePDF(pdfCfg, egressAllow, api, log)
			if err != nil {
				return err
			}
			defer pdfR.Close()
			pdfR.Register(reg)
			var globs []string
			if types != "" {
				for _, t := range strings.Split(types, ",") {
					if t = strings.TrimSpace(t); t != "" {
						globs = append(globs, t)
					}
				}
				reg = reg.Filter(globs)
			}
			w, err := worker.New(worker.Config{
				API: api, Registry: reg, ID: id, Name: name,
				Types: globs, Concurrency: concurrency, ShutdownGrace: grace, ClaimWait: claimWait, Logger: log,
			})
			if err != nil {
				return err
			}
			log.Info("worker started", "id", w.ID(), "controller", controllerURL, "types", reg.Queues())
			return w.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&controllerURL, "controller", "http://127.0.0.1:8080", "controller URL")
	fs.StringVar(&token, "worker-token", "", "worker bearer token")
	fs.StringVar(&types, "types", "", "queue/type globs to run, comma-separated (default all this worker can run)")
	fs.IntVar(&concurrency, "concurrency", 0, "tasks run at once (default number of CPUs)")
	fs.StringVar(&name, "name", "", "worker name shown by the controller (default host name)")
	fs.StringVar(&id, "id", "", "worker ID (default host-pid-random)")
	fs.DurationVar(&grace, "shutdown-grace", 30*time.Second, "on SIGTERM, how long running tasks may finish before they are handed back")
	fs.DurationVar(&claimWait, "claim-wait", 30*time.Second, "long-poll wait of a claim")
	fs.StringVar(&providers, "providers", "", "JSON file with the domain checks' endpoints, keys and thresholds (see docs/pipeline.md)")
	fs.StringVar(&egressAllow, "egress-allow", "", "private CIDRs the checks and the PDF browsers may reach, comma-separated (default none)")
	fs.DurationVar(&checkTimeout, "check-timeout", 0, "timeout of one provider request (default per check, 10-30s)")
	registerPDFBrowserFlags(fs, &pdfCfg)
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&logFormat, "log-format", "text", "text or json")
	usageEnv(fs)
	return cmd
}
