package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const (
	serverStartTimeout = 60 * time.Second
	serverStopTimeout  = 15 * time.Second
	pythonToolTimeout  = 5 * time.Minute
	callTimeout        = 30 * time.Second
)

// repoRoot is the checkout holding this module: the nearest parent of the test's directory with
// pyproject.toml and proto/.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "pyproject.toml")) && isDir(filepath.Join(dir, "proto", "e2a")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no parent directory of the test holds pyproject.toml and proto/e2a")
		}
		dir = parent
	}
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
func isDir(path string) bool { info, err := os.Stat(path); return err == nil && info.IsDir() }

// python is the repository's virtualenv interpreter (made by `make venv`, which `make test` runs first).
func python() (root, interpreter string, err error) {
	root, err = repoRoot()
	if err != nil {
		return "", "", err
	}
	interpreter = filepath.Join(root, ".venv", "bin", "python")
	if !isFile(interpreter) {
		return "", "", fmt.Errorf("%s is missing: run `make venv` (or `make test`) in %s first", interpreter, root)
	}
	return root, interpreter, nil
}

// runPython runs `.venv/bin/python args...` in the repository root and returns its standard output.
func runPython(t *testing.T, args ...string) []byte {
	t.Helper()
	root, interpreter, err := python()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pythonToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, args...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// pythonServer is `python -m e2a_grpc serve` on a free loopback port.
type pythonServer struct {
	address string
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{}
	waitErr error
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// startPythonServer starts the server and waits until its health service answers SERVING.
func startPythonServer() (*pythonServer, error) {
	root, interpreter, err := python()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp("", "e2a-grpc-server-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(interpreter, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = log, log // a file: a chatty server never blocks on a full pipe
	cmd.SysProcAttr = stopWithParent()
	if err := cmd.Start(); err != nil {
		log.Close()
		os.Remove(log.Name())
		return nil, err
	}
	s := &pythonServer{address: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	if err := s.waitServing(); err != nil {
		output := s.output()
		s.stop()
		return nil, fmt.Errorf("%w\nserver output:\n%s", err, output)
	}
	return s, nil
}

func (s *pythonServer) waitServing() error {
	conn, err := grpc.NewClient(s.address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(serverStartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited early: %v", s.waitErr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		reply, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && reply.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the server on %s was not SERVING within %v", s.address, serverStartTimeout)
}

func (s *pythonServer) output() string {
	data, _ := os.ReadFile(s.log.Name())
	return string(data)
}

// stop ends the server: SIGTERM (a graceful shutdown), then SIGKILL if it is still running.
func (s *pythonServer) stop() {
	defer func() { s.log.Close(); os.Remove(s.log.Name()) }()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(serverStopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// One server for the whole package, started by the first test that needs it and stopped by TestMain.
var shared struct {
	once   sync.Once
	server *pythonServer
	err    error
}

func serverAddress(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() { shared.server, shared.err = startPythonServer() })
	if shared.err != nil {
		t.Fatalf("starting the Python server: %v", shared.err)
	}
	return shared.server.address
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.server != nil {
		shared.server.stop()
	}
	os.Exit(code)
}

func dial(t *testing.T, address string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
