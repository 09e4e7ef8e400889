package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/httpapi"
)

func newServe() *cobra.Command {
	var (
		cfg                 app.Config
		adminTok, workerTok string
		logLevel, logFormat string
		db, egressAllow     string
		sandbox             bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the controller (and in-process workers)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel, logFormat)
			if err != nil {
				return err
			}
			cfg.Logger = log
			cfg.Tokens = httpapi.Tokens{Admin: adminTok, Worker: workerTok}
			cfg.DB, cfg.EgressAllow, cfg.Sandbox = db, egressAllow, sandbox
			ctx := cmd.Context()
			a, err := app.New(ctx, cfg)
			if err != nil {
				return err
			}
			if err := a.Start(ctx); err != nil {
				_ = a.Shutdown(context.Background())
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "baton listening on %s\n", a.URL())
			fmt.Fprintf(out, "admin token:  %s\n", a.Tokens.Admin)
			fmt.Fprintf(out, "worker token: %s\n", a.Tokens.Worker)
			<-ctx.Done()
			log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+30*time.Second)
			defer cancel()
			return a.Shutdown(sctx)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&cfg.DataDir, "data-dir", "./data", "directory for the embedded databases, tokens and artifacts")
	fs.StringVar(&db, "db", "", "main DB DSN: sqlite:PATH (default <data-dir>/baton.db) or mysql://user:pass@host:port/db")
	fs.StringVar(&cfg.Redis, "redis", "", "Redis URL of the queue store, e.g. redis://127.0.0.1:6379/0 (empty = embedded SQLite store)")
	fs.StringVar(&cfg.RedisNamespace, "redis-namespace", "baton", "key namespace in Redis (one hash tag: all keys in one cluster slot)")
	fs.IntVar(&cfg.Workers, "workers", -1, "in-process worker slots (-1 = number of CPUs, 0 = none)")
	fs.BoolVar(&sandbox, "sandbox", false, "start the built-in provider simulator and point every check at it")
	fs.StringVar(&adminTok, "admin-token", "", "admin bearer token (generated into <data-dir>/admin.token when empty)")
	fs.StringVar(&workerTok, "worker-token", "", "worker bearer token (generated into <data-dir>/worker.token when empty)")
	fs.StringVar(&cfg.Providers, "providers", "", "JSON file with the domain checks' endpoints, keys and thresholds (see docs/pipeline.md)")
	fs.StringVar(&egressAllow, "egress-allow", "", "private CIDRs outbound fetches may reach, comma-separated (default none)")
	fs.DurationVar(&cfg.Pipeline.ScanInterval, "scan-interval", 30*time.Second, "how often the dispatcher scans the main DB for domains to run")
	fs.Int64Var(&cfg.Pipeline.MaxInFlight, "max-in-flight", 20000, "domain tasks queued at once before a scan pauses")
	fs.DurationVar(&cfg.Pipeline.CheckTimeout, "check-timeout", 0, "timeout of one provider request (default 10s; 2s with --sandbox)")
	fs.DurationVar(&cfg.Pipeline.SandboxHang, "sandbox-hang", 5*time.Second, "how long the sandbox holds a simulated provider timeout")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 30*time.Second, "how long running tasks may finish at shutdown")
	registerPDFFlags(fs, &cfg.PDF)
	fs.StringVar(&cfg.S3.Endpoint, "s3-endpoint", "", "URL of an S3-compatible service for the artifacts, http(s)://host[:port] (default AWS S3)")
	fs.StringVar(&cfg.S3.Bucket, "s3-bucket", "", "keep artifacts (PDFs) in this existing S3 bucket instead of <data-dir>/artifacts; credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&cfg.S3.Prefix, "s3-prefix", "artifacts/", "key prefix of the artifacts in the S3 bucket")
	fs.StringVar(&cfg.S3.Region, "s3-region", "us-east-1", "region of the S3 bucket")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&logFormat, "log-format", "text", "text or json")
	usageEnv(fs)
	return cmd
}
