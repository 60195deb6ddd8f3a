package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/component-base/version"
)

const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1" // first address of serviceCIDR: the `kubernetes` Service
	saIssuer    = "https://kubernetes.default.svc.cluster.local"
)

// defaultControllers are the kube-controller-manager controllers `up` runs.
var defaultControllers = []string{
	"garbage-collector-controller",                // ownerReference cascades
	"namespace-controller",                        // namespace deletion
	"serviceaccount-controller",                   // the `default` ServiceAccount in each namespace
	"serviceaccount-token-controller",             // fills kubernetes.io/service-account-token Secrets
	"root-ca-certificate-publisher-controller",    // kube-root-ca.crt ConfigMap in each namespace
	"clusterrole-aggregation-controller",          // rules of the built-in admin/edit/view ClusterRoles
	"validatingadmissionpolicy-status-controller", // type-checks ValidatingAdmissionPolicies into .status
	"deployment-controller",                       // Deployments → ReplicaSets (the chart's operator)
	"replicaset-controller",                       // ReplicaSets → pods
}

// users of the static token file. Groups are comma separated.
var users = []struct{ name, uid, groups string }{
	{"admin", "testenv-admin", "system:masters"},
	{"alice", "testenv-alice", ""},
	{"bob", "testenv-bob", ""},
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", a...)
}

func up(args []string) int {
	// Children are started from this (locked) thread so that their
	// Pdeathsig, which the kernel ties to the creating thread, fires only
	// when this process dies.
	runtime.LockOSThread()

	fs := flag.NewFlagSet("testenv up", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: testenv up [flags]

Starts etcd (embedded), kube-apiserver and kube-controller-manager on 127.0.0.1
ephemeral ports. When ready, writes <dir>/kubeconfig, <dir>/env and <dir>/ready
and prints one line on stdout:

  READY kubeconfig=<dir>/kubeconfig env=<dir>/env server=https://127.0.0.1:<port> dir=<dir> pid=<pid>

On a start-up failure it prints "FAILED <reason>" instead and exits 1.
Stops everything on SIGTERM, SIGINT or SIGHUP (and, by default, when its parent
process exits). Component logs are in <dir>/logs/.

flags:
`)
		fs.PrintDefaults()
	}
	dirFlag := fs.String("dir", "", "state directory (default: a new temporary directory, removed on exit)")
	keep := fs.Bool("keep", false, "keep the temporary directory on exit (a --dir is always kept)")
	exitWithParent := fs.Bool("exit-with-parent", true, "shut down when the parent process exits")
	parentPID := fs.Int("parent-pid", 0, "also shut down when this process exits")
	stdinEOF := fs.Bool("exit-on-stdin-eof", false, "shut down when stdin reaches EOF (for callers holding a pipe)")
	controllers := fs.String("controllers", strings.Join(defaultControllers, ","),
		"kube-controller-manager --controllers; empty: do not run kube-controller-manager")
	timeout := fs.Duration("timeout", 120*time.Second, "start-up timeout")
	var apiArgs, kcmArgs stringList
	fs.Var(&apiArgs, "apiserver-arg", "extra kube-apiserver flag, e.g. --apiserver-arg=--v=4 (repeatable; last one wins)")
	fs.Var(&kcmArgs, "kcm-arg", "extra kube-controller-manager flag (repeatable; last one wins)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "testenv up: unexpected arguments %q\n", fs.Args())
		return 2
	}

	// Shutdown triggers: signals, parent death, stdin EOF.
	stop := make(chan string, 4)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		stop <- "signal " + s.String()
	}()
	if *exitWithParent || *parentPID > 0 {
		go watchParent(*exitWithParent, *parentPID, stop)
	}
	if *stdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- "stdin closed"
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stopReason string
	go func() {
		select {
		case stopReason = <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()

	env := &testenv{controllers: *controllers, apiArgs: apiArgs, kcmArgs: kcmArgs, timeout: *timeout}
	removeDir := false
	if *dirFlag == "" {
		d, err := os.MkdirTemp("", "orrery-testenv-")
		if err != nil {
			return failed("creating temporary directory: %v", err)
		}
		env.dir, removeDir = d, !*keep
	} else {
		d, err := filepath.Abs(*dirFlag)
		if err != nil {
			return failed("%v", err)
		}
		env.dir = d
	}
	defer func() {
		if removeDir {
			_ = os.RemoveAll(env.dir)
		}
	}()

	start := time.Now()
	err := env.start(ctx)
	if err != nil {
		env.shutdown()
		if ctx.Err() != nil {
			logf("interrupted during start-up (%s)", stopReason)
			fmt.Println("FAILED interrupted")
			return 1
		}
		return failed("%v", err)
	}
	logf("control plane ready in %s (Kubernetes %s, etcd %s): %s", time.Since(start).Round(time.Millisecond),
		version.Get().GitVersion, etcdVersion(), env.server)
	fmt.Printf("READY kubeconfig=%s env=%s server=%s dir=%s pid=%d\n",
		env.kubeconfig, filepath.Join(env.dir, "env"), env.server, env.dir, os.Getpid())

	code := 0
	select {
	case <-ctx.Done():
		logf("shutting down (%s)", stopReason)
	case <-env.api.done:
		logf("kube-apiserver exited unexpectedly: %v (see %s)", env.api.err, env.api.log)
		code = 1
	case <-env.kcmDone():
		logf("kube-controller-manager exited unexpectedly: %v (see %s)", env.kcm.err, env.kcm.log)
		code = 1
	case err := <-env.etcd.Err():
		logf("etcd failed: %v", err)
		code = 1
	}
	env.shutdown()
	logf("stopped")
	return code
}

func failed(format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	logf("start-up failed: %s", msg)
	first, _, _ := strings.Cut(msg, "\n")
	fmt.Printf("FAILED %s\n", first)
	return 1
}

// watchParent reports when the parent process (or --parent-pid) is gone.
// Polling getppid() follows the parent *process*: unlike PR_SET_PDEATHSIG it
// does not fire when the thread that spawned us exits (a Rust test thread).
func watchParent(ppid bool, pid int, stop chan<- string) {
	initial := os.Getppid()
	for range time.Tick(250 * time.Millisecond) {
		if ppid && initial != 1 && os.Getppid() != initial {
			stop <- fmt.Sprintf("parent process %d exited", initial)
			return
		}
		if pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
			stop <- fmt.Sprintf("process %d exited", pid)
			return
		}
	}
}

type testenv struct {
	dir, controllers string
	apiArgs, kcmArgs []string
	timeout          time.Duration

	pki        *pki
	tokens     map[string]string
	etcd       *etcdHandle
	etcdURL    string
	server     string
	kubeconfig string
	client     *http.Client
	api, kcm   *child
}

func (t *testenv) kcmDone() <-chan struct{} {
	if t.kcm == nil {
		return nil // blocks forever in select
	}
	return t.kcm.done
}

func (t *testenv) path(p ...string) string { return filepath.Join(append([]string{t.dir}, p...)...) }

func (t *testenv) start(ctx context.Context) error {
	deadline := time.Now().Add(t.timeout)
	if err := t.prepareDir(); err != nil {
		return err
	}
	var err error
	if t.pki, err = makePKI(t.path("pki")); err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(t.pki.CAPEM)
	t.client = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Proxy: nil},
	}

	// Static token users, plus the controller manager's own identity.
	t.tokens = map[string]string{}
	var csv strings.Builder
	for _, u := range users {
		t.tokens[u.name] = randomToken()
		fmt.Fprintf(&csv, "%s,%s,%s", t.tokens[u.name], u.name, u.uid)
		if u.groups != "" {
			fmt.Fprintf(&csv, ",%q", u.groups)
		}
		csv.WriteString("\n")
	}
	t.tokens["kcm"] = randomToken()
	fmt.Fprintf(&csv, "%s,system:kube-controller-manager,testenv-kcm,\"system:masters\"\n", t.tokens["kcm"])
	if err := os.WriteFile(t.path("pki", "tokens.csv"), []byte(csv.String()), 0o600); err != nil {
		return err
	}

	e, url, err := startEtcd(t.dir, t.path("logs", "etcd.log"), time.Until(deadline))
	if err != nil {
		return err
	}
	t.etcd, t.etcdURL = &etcdHandle{e}, url

	if err := t.startAPIServer(ctx, deadline); err != nil {
		return err
	}
	t.kubeconfig = t.path("kubeconfig")
	if err := writeFileAtomic(t.kubeconfig, t.kubeconfigYAML([]string{"admin", "alice", "bob"}), 0o600); err != nil {
		return err
	}
	if t.controllers != "" {
		if err := writeFileAtomic(t.path("kcm.kubeconfig"), t.kubeconfigYAML([]string{"kcm"}), 0o600); err != nil {
			return err
		}
		if err := t.startKCM(ctx, deadline); err != nil {
			return err
		}
	} else if err := t.waitFor(ctx, deadline, nil, "namespace default", func() (bool, error) {
		return t.exists("/api/v1/namespaces/default")
	}); err != nil {
		return err
	}
	if err := writeFileAtomic(t.path("env"), []byte(t.envFile()), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(t.path("ready"), []byte(t.kubeconfig+"\n"), 0o644)
}

func (t *testenv) prepareDir() error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return err
	}
	if b, err := os.ReadFile(t.path("testenv.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != os.Getpid() &&
			syscall.Kill(pid, 0) == nil && isTestenv(pid) {
			return fmt.Errorf("another testenv (pid %d) is running in %s", pid, t.dir)
		}
	}
	// Start from a clean state; logs of the previous run are overwritten.
	for _, p := range []string{"ready", "env", "kubeconfig", "kcm.kubeconfig", "etcd", "pki", "logs"} {
		if err := os.RemoveAll(t.path(p)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(t.path("logs"), 0o700); err != nil {
		return err
	}
	return os.WriteFile(t.path("testenv.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

func isTestenv(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte("up"))
}

func (t *testenv) startAPIServer(ctx context.Context, deadline time.Time) error {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		t.server = fmt.Sprintf("https://127.0.0.1:%d", port)
		p := t.pki
		args := []string{
			"--etcd-servers=" + t.etcdURL,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--advertise-address=127.0.0.1",
			"--endpoint-reconciler-type=none",
			"--cert-dir=" + t.path("pki"),
			"--tls-cert-file=" + p.ServingCert,
			"--tls-private-key-file=" + p.ServingKey,
			"--client-ca-file=" + p.CACert,
			"--token-auth-file=" + t.path("pki", "tokens.csv"),
			"--authorization-mode=RBAC",
			"--service-account-issuer=" + saIssuer,
			"--service-account-key-file=" + p.SAPub,
			"--service-account-signing-key-file=" + p.SAKey,
			"--service-cluster-ip-range=" + serviceCIDR,
			"--allow-privileged=true",
			"--profiling=false",
		}
		logPath := t.path("logs", "kube-apiserver.log")
		t.api, err = startChild("kube-apiserver", logPath, append(args, t.apiArgs...))
		if err != nil {
			return err
		}
		err = t.waitFor(ctx, deadline, t.api, "kube-apiserver /readyz", func() (bool, error) {
			code, _, err := t.get("/readyz", t.tokens["admin"])
			return err == nil && code == http.StatusOK, nil
		})
		if err == nil {
			return nil
		}
		exited := t.api.exited()
		t.api.stop(5 * time.Second)
		logTail := tail(logPath, 4096)
		if exited && attempt < attempts && strings.Contains(logTail, "address already in use") {
			logf("port %d was taken, retrying", port)
			_ = os.Rename(logPath, logPath+"."+strconv.Itoa(attempt))
			continue
		}
		return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, logPath, logTail)
	}
}

func (t *testenv) startKCM(ctx context.Context, deadline time.Time) error {
	p := t.pki
	args := []string{
		"--kubeconfig=" + t.path("kcm.kubeconfig"),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + p.SAKey,
		"--root-ca-file=" + p.CACert,
		"--controllers=" + t.controllers,
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
	logPath := t.path("logs", "kube-controller-manager.log")
	var err error
	t.kcm, err = startChild("kube-controller-manager", logPath, append(args, t.kcmArgs...))
	if err != nil {
		return err
	}
	// Wait for the observable effects of the controllers tests rely on first.
	has := func(c string) bool {
		for _, x := range strings.Split(t.controllers, ",") {
			if x == c || x == "*" {
				return true
			}
		}
		return false
	}
	checks := []struct {
		what string
		ok   func() (bool, error)
	}{{"namespace default", func() (bool, error) { return t.exists("/api/v1/namespaces/default") }}}
	if has("serviceaccount-controller") {
		checks = append(checks, struct {
			what string
			ok   func() (bool, error)
		}{"ServiceAccount default/default", func() (bool, error) {
			return t.exists("/api/v1/namespaces/default/serviceaccounts/default")
		}})
	}
	if has("root-ca-certificate-publisher-controller") {
		checks = append(checks, struct {
			what string
			ok   func() (bool, error)
		}{"ConfigMap default/kube-root-ca.crt", func() (bool, error) {
			return t.exists("/api/v1/namespaces/default/configmaps/kube-root-ca.crt")
		}})
	}
	if has("clusterrole-aggregation-controller") {
		checks = append(checks, struct {
			what string
			ok   func() (bool, error)
		}{"aggregated ClusterRole edit", func() (bool, error) {
			code, body, err := t.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/edit", t.tokens["admin"])
			if err != nil || code != http.StatusOK {
				return false, nil
			}
			var cr struct {
				Rules []json.RawMessage `json:"rules"`
			}
			return json.Unmarshal(body, &cr) == nil && len(cr.Rules) > 0, nil
		}})
	}
	for _, c := range checks {
		if err := t.waitFor(ctx, deadline, t.kcm, c.what, c.ok); err != nil {
			return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, logPath, tail(logPath, 4096))
		}
	}
	return nil
}

func (t *testenv) get(path, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, t.server+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func (t *testenv) exists(path string) (bool, error) {
	code, _, err := t.get(path, t.tokens["admin"])
	return err == nil && code == http.StatusOK, nil
}

// waitFor polls ok until it returns true, the deadline passes, ctx is
// cancelled, or proc (if any) exits.
func (t *testenv) waitFor(ctx context.Context, deadline time.Time, proc *child, what string, ok func() (bool, error)) error {
	for {
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if proc != nil && proc.exited() {
			return fmt.Errorf("%s exited (%v) while waiting for %s", proc.name, proc.err, what)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (t *testenv) kubeconfigYAML(names []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: %s
    certificate-authority-data: %s
users:
`, t.server, base64.StdEncoding.EncodeToString(t.pki.CAPEM))
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %s\n  user:\n    token: %s\n", n, t.tokens[n])
	}
	b.WriteString("contexts:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: testenv\n    user: %s\n    namespace: default\n", n, n)
	}
	fmt.Fprintf(&b, "current-context: %s\npreferences: {}\n", names[0])
	return []byte(b.String())
}

func (t *testenv) envFile() string {
	v := version.Get()
	bin := ""
	if exe, err := os.Executable(); err == nil {
		bin = filepath.Dir(exe)
	}
	lines := []string{
		"TESTENV_DIR=" + t.dir,
		"TESTENV_BIN=" + bin, // also holds kubectl
		"TESTENV_KUBECONFIG=" + t.kubeconfig,
		"KUBECONFIG=" + t.kubeconfig,
		"TESTENV_SERVER=" + t.server,
		"TESTENV_CA_FILE=" + t.pki.CACert,
		"TESTENV_ETCD=" + t.etcdURL,
		"TESTENV_PID=" + strconv.Itoa(os.Getpid()),
		"TESTENV_APISERVER_PID=" + strconv.Itoa(t.api.cmd.Process.Pid),
		"TESTENV_KUBERNETES_VERSION=" + v.GitVersion,
		"TESTENV_ADMIN_TOKEN=" + t.tokens["admin"],
		"TESTENV_ALICE_TOKEN=" + t.tokens["alice"],
		"TESTENV_BOB_TOKEN=" + t.tokens["bob"],
	}
	if t.kcm != nil {
		lines = append(lines, "TESTENV_KCM_PID="+strconv.Itoa(t.kcm.cmd.Process.Pid))
	}
	return strings.Join(lines, "\n") + "\n"
}

// shutdown stops the components in reverse order. Safe to call on a
// partially started environment.
func (t *testenv) shutdown() {
	_ = os.Remove(t.path("ready"))
	if t.kcm != nil {
		t.kcm.stop(5 * time.Second)
	}
	if t.api != nil {
		t.api.stop(10 * time.Second)
	}
	if t.etcd != nil {
		t.etcd.close()
	}
	_ = os.Remove(t.path("testenv.pid"))
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// child is a component process: this binary re-executed as
// `testenv kube-apiserver ...` or `testenv kube-controller-manager ...`.
type child struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
	err       error
}

func startChild(name, logPath string, args []string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(exe, append([]string{name}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // a terminal's Ctrl-C reaches only `up`, which stops children in order
		Pdeathsig: syscall.SIGKILL, // ...and if `up` is killed, the children die with it
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *child) stop(grace time.Duration) {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
