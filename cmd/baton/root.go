package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "baton",
		Short:         "Baton: a pull-based task controller for domain vetting and HTML→PDF",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags())
		},
	}
	root.AddCommand(newServe(), newWorker(), newStatus(), newBench(), newDomains(), newPipeline())
	root.AddCommand(newPDF())
	return root
}

// envName is the environment variable that sets a flag: BATON_<FLAG>.
func envName(flag string) string {
	return "BATON_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// BATON_<FLAG> environment variable.
func applyEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s: %w", envName(f.Name), e)
		}
	})
	return err
}

// usageEnv appends the environment variable to every flag's usage text.
func usageEnv(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(f.Usage, "$BATON_") {
			f.Usage += " ($" + envName(f.Name) + ")"
		}
	})
}

// clientFlags are shared by the client commands.
type clientFlags struct {
	controller string
	adminToken string
}

func (c *clientFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.controller, "controller", "http://127.0.0.1:8080", "controller URL")
	fs.StringVar(&c.adminToken, "admin-token", "", "admin token (printed by baton serve, stored in <data-dir>/admin.token)")
}

func (c *clientFlags) token() (string, error) {
	if c.adminToken != "" {
		return c.adminToken, nil
	}
	if b, err := os.ReadFile("data/admin.token"); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	return "", fmt.Errorf("no admin token: pass --admin-token or set BATON_ADMIN_TOKEN (baton serve prints it and stores it in <data-dir>/admin.token)")
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
