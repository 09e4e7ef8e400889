// Package s3test starts a real S3-compatible server for tests: SeaweedFS
// (the weed binary, Apache-2.0) as one process on loopback, with one
// access key, in a temporary directory, stopped when the test ends.
//
// The binary is $BATON_WEED, else the one scripts/install-seaweedfs.sh
// builds into ${BATON_TOOLS:-$HOME/.cache/baton-tools}/weed-<Version>/weed.
// Without it the test fails (it never skips) and says how to get it.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Version is the SeaweedFS module version scripts/install-seaweedfs.sh
// builds (keep the two in step).
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

// Test credentials of the one identity the server knows.
const (
	AccessKey = "baton-test-access"
	SecretKey = "baton-test-secret-0123456789abcdef"
)

// Server is a running weed S3 gateway.
type Server struct {
	// Endpoint is http://127.0.0.1:<port>.
	Endpoint string
	// Dir holds the server's data and its log (weed.log).
	Dir string
	// Ready is how long the server took to accept writes.
	Ready time.Duration

	stop     func()
	stopOnce sync.Once
}

// Binary returns the path of the weed binary, or an error saying how to
// get one.
func Binary() (string, error) {
	if p := os.Getenv("BATON_WEED"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("BATON_WEED=%s: %w (scripts/install-seaweedfs.sh builds weed and prints its path)", p, err)
		}
		return p, nil
	}
	tools := os.Getenv("BATON_TOOLS")
	if tools == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("the SeaweedFS weed binary is required: run scripts/install-seaweedfs.sh or set BATON_WEED (%v)", err)
		}
		tools = filepath.Join(home, ".cache", "baton-tools")
	}
	p := filepath.Join(tools, "weed-"+Version, "weed")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the SeaweedFS weed binary is required: run scripts/install-seaweedfs.sh or set BATON_WEED=/path/to/weed (%v)", err)
	}
	return p, nil
}

// Start runs weed (Launch) for one test and stops it when the test ends.
// It fails the test when the binary is missing or the server does not
// come up.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch runs weed (master, volume server, filer and S3 gateway in one
// process, bound to 127.0.0.1 on free ports, telemetry off) in a new
// temporary directory and waits until the S3 gateway accepts writes. Stop
// ends it and removes the directory.
func Launch() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "baton-weed-*")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	conf := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(conf, []byte(`{"identities":[{"name":"baton","credentials":[{"accessKey":"`+AccessKey+
		`","secretKey":"`+SecretKey+`"}],"actions":["Admin","Read","List","Tagging","Write"]}]}`), 0o600); err != nil {
		return fail(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		return fail(err)
	}
	ports, err := freePorts(8)
	if err != nil {
		return fail(err)
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	args := []string{"server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + p(0), "-master.port.grpc=" + p(1),
		"-master.volumeSizeLimitMB=64", "-master.telemetry=false", "-master.telemetry.url=http://127.0.0.1:1/",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3), "-volume.max=100",
		"-filer", "-filer.port=" + p(4), "-filer.port.grpc=" + p(5),
		"-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3", "-s3.port=" + p(6), "-s3.port.grpc=" + p(7), "-s3.config=" + conf,
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-s3.autoCreateBucket=false",
	}
	logf, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fail(fmt.Errorf("start %s: %w", bin, err))
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()
	s := &Server{Endpoint: "http://127.0.0.1:" + p(6), Dir: dir}
	s.stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		_ = os.RemoveAll(dir)
	}
	began := time.Now()
	if err := s.waitReady(done, 90*time.Second); err != nil {
		tail := s.logTail()
		s.Stop()
		return nil, fmt.Errorf("weed (%s) did not come up: %w\n%s", bin, err, tail)
	}
	s.Ready = time.Since(began)
	return s, nil
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	s.stopOnce.Do(s.stop)
}

// waitReady waits until a bucket can be created and written to: the
// master, volume server, filer and gateway are all up.
func (s *Server) waitReady(exited <-chan struct{}, within time.Duration) error {
	// One try per probe: the client's own retries back off for seconds.
	c, err := minio.New(strings.TrimPrefix(s.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: "us-east-1", MaxRetries: 1,
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("weed exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last = s.probe(ctx, c)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %v", within, last)
}

func (s *Server) probe(ctx context.Context, c *minio.Client) error {
	const bucket = "baton-probe"
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
			return err
		}
	}
	_, err = c.PutObject(ctx, bucket, "probe", bytes.NewReader([]byte("ok")), 2, minio.PutObjectOptions{})
	return err
}

// Client returns a client with the server's credentials.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(s.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: "us-east-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// MakeBucket creates a bucket.
func (s *Server) MakeBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket %s: %v\n%s", name, err, s.logTail())
	}
}

// logTail is the end of the server's log, for failure messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "weed.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "weed.log: ...\n" + string(b)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, below 55536 so
// weed's default gRPC offset (+10000) could never overflow.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		if port := ln.Addr().(*net.TCPAddr).Port; port < 55536 {
			ports = append(ports, port)
		}
	}
	return ports, nil
}
