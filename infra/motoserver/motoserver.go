// Package motoserver starts and finds moto server, the local AWS emulator the
// local stack and the component tests talk to over real HTTP.
package motoserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EndpointEnv names a moto server that is already running (make test starts
// one and shares it with every test package).
const EndpointEnv = "ORACLE_MOTO_ENDPOINT"

// Server is a running moto server.
type Server struct {
	Endpoint string
	cmd      *exec.Cmd
}

// Script runs moto with DynamoDB and S3 requests serialised, so that
// conditional writes are atomic as in AWS (see the script's comment).
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "serve.py")
}

// Start runs moto server on 127.0.0.1:port and waits until it answers. The
// process dies with its parent.
func Start(ctx context.Context, port int) (*Server, error) {
	if _, err := exec.LookPath("moto_server"); err != nil {
		return nil, fmt.Errorf("moto_server not found on PATH (make tools installs it): %w", err)
	}
	cmd := exec.Command("python3", Script(), "127.0.0.1", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto_server: %w", err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd}
	if err := Wait(ctx, s.Endpoint, 30*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop ends the server.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// Wait polls endpoint until moto answers or the timeout passes.
func Wait(ctx context.Context, endpoint string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if Alive(ctx, endpoint) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moto server at %s did not answer within %s", endpoint, timeout)
		case <-tick.C:
		}
	}
}

// Alive reports whether a moto server answers at endpoint.
func Alive(ctx context.Context, endpoint string) bool {
	// The dashboard page is cheap; the state dump is not.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/moto-api/", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Ports are handed out below Linux's ephemeral range (32768-60999), where
// the kernel never picks one on its own: a port the kernel chose for a
// listener on :0 may be given again to an outgoing connection, or to the
// next :0, before its user binds it, and stacks started by parallel tests
// open many of both. Each process starts at a random point of the range and
// walks on, so no port is handed out twice in one process.
const (
	portsFrom = 20000
	portsTo   = 32768
)

var (
	portsMu   sync.Mutex
	portsNext = portsFrom + rand.IntN(portsTo-portsFrom)
)

// FreePort returns an unused TCP port on the loopback address, one this
// process has not handed out before.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range portsTo - portsFrom {
		port := portsNext
		if portsNext++; portsNext == portsTo {
			portsNext = portsFrom
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken by another process
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("find a free port: none free in %d-%d", portsFrom, portsTo-1)
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
)

// ForTest returns the endpoint of a moto server for tests: the one named by
// ORACLE_MOTO_ENDPOINT, or one started for this test binary. Tests isolate
// themselves with unique resource names, so one server serves them all.
func ForTest(tb testing.TB) string {
	tb.Helper()
	if ep := os.Getenv(EndpointEnv); ep != "" {
		if !Alive(context.Background(), ep) {
			tb.Fatalf("%s=%s does not answer", EndpointEnv, ep)
		}
		return ep
	}
	sharedOnce.Do(func() {
		port, err := FreePort()
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = Start(context.Background(), port)
	})
	if sharedErr != nil {
		if errors.Is(sharedErr, exec.ErrNotFound) {
			tb.Fatalf("component tests need moto_server: %v", sharedErr)
		}
		tb.Fatalf("start moto: %v", sharedErr)
	}
	return shared.Endpoint
}
