// Package motoserver starts and finds moto server, the local AWS emulator the
// local stack and the component tests talk to over real HTTP.
package motoserver

import (
	"context"
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

// Server is a running moto server: one process, or a group of them behind
// a router (see group.go), which Start runs.
type Server struct {
	Endpoint string
	cmd      *exec.Cmd
	exited   chan error
	stopOnce sync.Once
	// procs and router are a group's processes and its endpoint.
	procs  []*Server
	router *http.Server
}

// Script runs moto with each DynamoDB item's and S3 key's requests applied
// one at a time, so that conditional writes are atomic as in AWS, and
// requests to different items, tables and keys together (see the script's
// comment).
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "serve.py")
}

// Python is the interpreter that runs serve.py: the project's virtual
// environment when `make run` or `make tools` made one (.build/venv, for a
// machine whose python3 could not import moto), else python3 on PATH.
func Python() string {
	_, file, _, _ := runtime.Caller(0)
	venv := filepath.Join(filepath.Dir(file), "..", "..", ".build", "venv", "bin", "python3")
	if _, err := os.Stat(venv); err == nil {
		return venv
	}
	return "python3"
}

// Start runs moto server on 127.0.0.1:port, as a process for DynamoDB, one
// for S3 and one for the other services behind a router on that port (see
// group.go), and waits until they answer. The processes die with their
// parent, and the router with this process. When serve.py exits first (moto
// missing, say), the error carries what it printed.
func Start(ctx context.Context, port int) (*Server, error) {
	return startGroup(ctx, port)
}

// startProcess runs one serve.py on 127.0.0.1:port, with env added to this
// process's environment, and waits until it answers.
func startProcess(ctx context.Context, port int, env ...string) (*Server, error) {
	python := Python()
	if _, err := exec.LookPath(python); err != nil {
		return nil, fmt.Errorf("moto server needs python3 with moto (make tools installs it): %w", err)
	}
	cmd := exec.Command(python, Script(), "127.0.0.1", strconv.Itoa(port))
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, exited: exited}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case err := <-exited:
			exited <- err // for Stop
			cancel()
		case <-waitCtx.Done():
		}
	}()
	if err := Wait(waitCtx, s.Endpoint, 30*time.Second); err != nil {
		s.Stop()
		if out := stderr.String(); out != "" {
			return nil, fmt.Errorf("moto server (%s %s) did not start (make tools installs moto): %s", python, Script(), out)
		}
		return nil, err
	}
	return s, nil
}

// tailBuffer keeps the last 4 KiB written to it: enough for a traceback's end.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 4096 {
		b.buf = b.buf[len(b.buf)-4096:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Stop ends the server: its process, or its router and processes.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.router != nil {
			_ = s.router.Close()
			for _, p := range s.procs {
				p.Stop()
			}
			return
		}
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	})
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
		tb.Fatalf("start moto: %v", sharedErr)
	}
	return shared.Endpoint
}
