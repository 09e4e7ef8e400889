package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/pdf"
)

func newPDF() *cobra.Command {
	var (
		cf                        clientFlags
		apiKey, out, opts, prio   string
		baseURL, idem, callbackTo string
		wait                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pdf URL|FILE.html -o OUT.pdf",
		Short: "Convert a URL or an HTML file to PDF: submit, wait, download",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o OUT.pdf is required")
			}
			tok := apiKey
			if tok == "" {
				var err error
				if tok, err = cf.token(); err != nil {
					return fmt.Errorf("%w (or pass --api-key)", err)
				}
			}
			req := pdf.CreateRequest{Priority: prio}
			src := args[0]
			if u, err := url.Parse(src); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
				req.Source = pdf.Source{Type: "url", Content: src}
			} else {
				b, err := os.ReadFile(src)
				if err != nil {
					return fmt.Errorf("read %s: %w", src, err)
				}
				req.Source = pdf.Source{Type: "html", Content: string(b), BaseURL: baseURL}
			}
			if opts != "" {
				if !json.Valid([]byte(opts)) {
					return fmt.Errorf("--options must be a JSON object")
				}
				req.Options = json.RawMessage(opts)
			}
			if callbackTo != "" {
				req.Callback = &pdf.CallbackSpec{URL: callbackTo}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			c := httpapi.NewClient(cf.controller, tok)
			var created pdf.TaskView
			hreq, err := jsonRequest(ctx, c, http.MethodPost, "/api/tasks/pdf", req)
			if err != nil {
				return err
			}
			if idem != "" {
				hreq.Header.Set("Idempotency-Key", idem)
			}
			if err := sendJSON(c, hreq, &created); err != nil {
				return err
			}
			errOut := cmd.ErrOrStderr()
			fmt.Fprintf(errOut, "task %s queued on %s\n", created.TaskID, created.Queue)
			var v pdf.TaskView
			for {
				if err := c.Do(ctx, http.MethodGet, "/api/tasks/"+url.PathEscape(created.TaskID), nil, &v); err != nil {
					return err
				}
				if v.Status.Terminal() {
					break
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("task %s still %s after %s (--wait)", created.TaskID, v.Status, wait)
				case <-time.After(300 * time.Millisecond):
				}
			}
			if v.Status != baton.StateCompleted {
				return fmt.Errorf("task %s ended %s: %s", v.TaskID, v.Status, v.Error)
			}
			hreq, err = http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/api/tasks/"+url.PathEscape(v.TaskID)+"/result", nil)
			if err != nil {
				return err
			}
			hreq.Header.Set("Authorization", "Bearer "+tok)
			resp, err := c.HTTP.Do(hreq)
			if err != nil {
				return fmt.Errorf("download: %w", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				return fmt.Errorf("download: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			n, err := io.Copy(f, resp.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", out, err)
			}
			fmt.Fprintf(errOut, "wrote %s (%d bytes, %d pages, %d attempts)\n", out, n, v.Pages, v.Attempts)
			return nil
		},
	}
	fs := cmd.Flags()
	cf.register(fs)
	fs.StringVar(&apiKey, "api-key", "", "API key to submit with (default: the admin token)")
	fs.StringVarP(&out, "output", "o", "", "where to write the PDF")
	fs.StringVar(&opts, "options", "", `render options as JSON, e.g. '{"format":"Letter","landscape":true}'`)
	fs.StringVar(&prio, "priority", "", "fast, normal or slow (default: the dry run's suggestion)")
	fs.StringVar(&baseURL, "base-url", "", "base URL of an HTML file's relative links")
	fs.StringVar(&idem, "idempotency-key", "", "Idempotency-Key header")
	fs.StringVar(&callbackTo, "callback", "", "callback URL")
	fs.DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the PDF")
	usageEnv(fs)
	return cmd
}

func jsonRequest(ctx context.Context, c *httpapi.Client, method, path string, in any) (*http.Request, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	return req, nil
}

func sendJSON(c *httpapi.Client, req *http.Request, out any) error {
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		var eb httpapi.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return &httpapi.APIError{Status: resp.StatusCode, Detail: eb.Error}
		}
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, out)
}
