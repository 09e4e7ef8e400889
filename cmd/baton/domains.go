package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/pipeline"
)

func newDomains() *cobra.Command {
	cmd := &cobra.Command{Use: "domains", Short: "Manage the domains of the vetting pipeline"}
	cmd.AddCommand(newDomainsImport())
	return cmd
}

func newDomainsImport() *cobra.Command {
	var (
		cf    clientFlags
		chunk int
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Import domains: one per line, or CSV name,delete_at[,source]",
		Long: `Import domains into the main DB through the controller's API.

Lines are one domain each, or CSV "name,delete_at[,source]" (delete_at as
RFC 3339, "2006-01-02 15:04:05" or "2006-01-02"; UTC when no zone). Blank
lines and # comments are skipped. The file is streamed in chunks, so a file
of millions of lines never sits in memory. Prints added / duplicates /
invalid, with the line number and reason of each invalid line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := cf.token()
			if err != nil {
				return err
			}
			var in io.Reader = os.Stdin
			var size int64 = -1
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil {
					size = st.Size()
				}
				in = f
			}
			var bar *progressbar.ProgressBar
			if !quiet {
				bar = progressbar.DefaultBytes(size, "importing")
				in = io.TeeReader(in, bar)
			}
			res, err := importStream(cmd.Context(), httpapi.NewClient(cf.controller, tok), in, chunk)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "added %d, duplicates %d, invalid %d\n", res.Added, res.Duplicates, res.InvalidCount)
			for _, iv := range res.Invalid {
				fmt.Fprintf(out, "line %d: %q: %s\n", iv.Line, iv.Name, iv.Reason)
			}
			if n := res.InvalidCount - len(res.Invalid); n > 0 {
				fmt.Fprintf(out, "(%d more invalid lines not listed)\n", n)
			}
			return err
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().IntVar(&chunk, "chunk", 20000, "lines per request")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	usageEnv(cmd.Flags())
	return cmd
}

// importStream sends r in chunks of whole lines and adds up the answers,
// turning each chunk's line numbers into the file's.
func importStream(ctx context.Context, c *httpapi.Client, r io.Reader, chunk int) (pipeline.ImportResult, error) {
	total := pipeline.ImportResult{Invalid: []pipeline.InvalidLine{}}
	br := bufio.NewReaderSize(r, 1<<20)
	var buf bytes.Buffer
	offset, lines := 0, 0
	send := func() error {
		if buf.Len() == 0 {
			return nil
		}
		res, err := postImport(ctx, c, buf.Bytes())
		if err != nil {
			return err
		}
		total.Added += res.Added
		total.Duplicates += res.Duplicates
		total.InvalidCount += res.InvalidCount
		for _, iv := range res.Invalid {
			if len(total.Invalid) < 1000 {
				iv.Line += offset
				total.Invalid = append(total.Invalid, iv)
			}
		}
		offset += lines
		lines = 0
		buf.Reset()
		return nil
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !bytes.HasSuffix(line, []byte("\n")) {
				line = append(line, '\n')
			}
			buf.Write(line)
			lines++
			if lines >= chunk || buf.Len() >= pipeline.ImportBodyLimit/2 {
				if err := send(); err != nil {
					return total, err
				}
			}
		}
		if err == io.EOF {
			return total, send()
		}
		if err != nil {
			return total, err
		}
	}
}

func postImport(ctx context.Context, c *httpapi.Client, body []byte) (pipeline.ImportResult, error) {
	var res pipeline.ImportResult
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/api/domains", bytes.NewReader(body))
	if err != nil {
		return res, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return res, fmt.Errorf("controller answered %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return res, jsonDecodeInto(resp.Body, &res)
}
