package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/artifact"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/queue"
)

// Client is a Go client of the controller's API. With a worker token it is
// a baton.WorkerAPI for remote workers; with the admin token it also reads
// and changes tasks, queues and workers.
type Client struct {
	// Base is the controller's URL, e.g. http://127.0.0.1:8080.
	Base  string
	Token string
	HTTP  *http.Client
}

var _ baton.WorkerAPI = (*Client)(nil)

// NewClient returns a client with a transport tuned for many concurrent
// long-polls to one controller.
func NewClient(base, token string) *Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Client{Base: strings.TrimRight(base, "/"), Token: token, HTTP: &http.Client{Transport: tr}}
}

// APIError is an error answer from the controller. It unwraps to a
// *baton.Error with the same code, so errors.Is(err, baton.ErrLeaseLost)
// style checks work through baton.ErrorCode.
type APIError struct {
	Status int
	Detail ErrorDetail
}

func (e *APIError) Error() string {
	return fmt.Sprintf("controller answered %d %s: %s", e.Status, e.Detail.Code, e.Detail.Message)
}

// Unwrap exposes the application error.
func (e *APIError) Unwrap() error {
	return &baton.Error{Code: e.Detail.Code, Message: e.Detail.Message}
}

// Do sends a JSON request and decodes a JSON answer into out (if non-nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

func (c *Client) send(req *http.Request, out any) error {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var eb ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" {
			eb.Error = ErrorDetail{Code: codeForStatus(resp.StatusCode), Message: strings.TrimSpace(string(b))}
		}
		return &APIError{Status: resp.StatusCode, Detail: eb.Error}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s answer: %w", req.URL.Path, err)
	}
	return nil
}

func codeForStatus(st int) string {
	switch st {
	case 400:
		return baton.EInvalid
	case 401:
		return baton.EUnauthorized
	case 403:
		return baton.EForbidden
	case 404:
		return baton.ENotFound
	case 409:
		return baton.EConflict
	case 413:
		return baton.ETooLarge
	case 503, 502, 504:
		return baton.EUnavailable
	}
	return baton.EInternal
}

// Claim implements baton.WorkerAPI.
func (c *Client) Claim(ctx context.Context, req baton.ClaimRequest) ([]baton.Task, error) {
	var resp baton.ClaimResponse
	err := c.Do(ctx, http.MethodPost, "/api/worker/claim", req, &resp)
	return resp.Tasks, err
}

// Heartbeat implements baton.WorkerAPI.
func (c *Client) Heartbeat(ctx context.Context, id string, req baton.HeartbeatRequest) (time.Time, error) {
	var resp baton.HeartbeatResponse
	err := c.Do(ctx, http.MethodPost, "/api/worker/tasks/"+url.PathEscape(id)+"/heartbeat", req, &resp)
	return resp.LeaseExpiresAt, err
}

// Results implements baton.WorkerAPI.
func (c *Client) Results(ctx context.Context, items []baton.ResultItem) (baton.ResultsResponse, error) {
	var resp baton.ResultsResponse
	err := c.Do(ctx, http.MethodPost, "/api/worker/results", baton.ResultsRequest{Results: items}, &resp)
	return resp, err
}

// Release implements baton.WorkerAPI.
func (c *Client) Release(ctx context.Context, id string, req baton.ReleaseRequest) error {
	return c.Do(ctx, http.MethodPost, "/api/worker/tasks/"+url.PathEscape(id)+"/release", req, nil)
}

// Upload sends an artifact for a task the caller holds the lease of and
// returns its size and digest as the controller stored it.
func (c *Client) Upload(ctx context.Context, id, leaseToken string, r io.Reader) (artifact.Info, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.Base+"/api/worker/tasks/"+url.PathEscape(id)+"/artifact", r)
	if err != nil {
		return artifact.Info{}, err
	}
	req.Header.Set("X-Lease-Token", leaseToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	var out artifact.Info
	return out, c.send(req, &out)
}

// CreateTask submits a generic task.
func (c *Client) CreateTask(ctx context.Context, spec controller.TaskSpec) (controller.Created, error) {
	var out controller.Created
	err := c.Do(ctx, http.MethodPost, "/api/tasks", spec, &out)
	return out, err
}

// CreateTasks submits a batch of generic tasks.
func (c *Client) CreateTasks(ctx context.Context, specs []controller.TaskSpec) ([]controller.Created, error) {
	var out TaskBatchResponse
	err := c.Do(ctx, http.MethodPost, "/api/tasks/batch", TaskBatch{Tasks: specs}, &out)
	return out.Tasks, err
}

// Task reads a task.
func (c *Client) Task(ctx context.Context, id string) (baton.TaskInfo, error) {
	var out baton.TaskInfo
	err := c.Do(ctx, http.MethodGet, "/api/tasks/"+url.PathEscape(id), nil, &out)
	return out, err
}

// Queues lists queues.
func (c *Client) Queues(ctx context.Context) ([]queue.QueueStat, error) {
	var out []queue.QueueStat
	err := c.Do(ctx, http.MethodGet, "/api/queues", nil, &out)
	return out, err
}

// Workers lists workers.
func (c *Client) Workers(ctx context.Context) ([]queue.WorkerInfo, error) {
	var out []queue.WorkerInfo
	err := c.Do(ctx, http.MethodGet, "/api/workers", nil, &out)
	return out, err
}

// PauseQueue pauses (or resumes) a queue.
func (c *Client) PauseQueue(ctx context.Context, name string, paused bool) error {
	op := "resume"
	if paused {
		op = "pause"
	}
	return c.Do(ctx, http.MethodPost, "/api/queues/"+url.PathEscape(name)+"/"+op, nil, nil)
}
