// Command testenv is the Orrery Studio test control plane: a multi-call binary
// that contains kube-apiserver and kube-controller-manager (Kubernetes v1.36.3,
// built from the k8s.io/kubernetes Go module) and a launcher, `testenv up`,
// which runs an embedded etcd and the two components as child processes of
// itself on 127.0.0.1.
//
// Subcommands:
//
//	testenv up [flags]                      start a control plane (see up.go)
//	testenv kube-apiserver [flags]          upstream kube-apiserver
//	testenv kube-controller-manager [flags] upstream kube-controller-manager
//	testenv version                         print the Kubernetes version compiled in
//	testenv promcheck < metrics.txt         parse and lint Prometheus text (see promcheck.go)
//	testenv otlpsink [--fail N]             receive OTLP/HTTP traces; print spans as JSON (see otlpsink.go)
//
// The binary also dispatches on its own name, so a symlink called
// kube-apiserver or kube-controller-manager behaves like the upstream binary.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "time/tzdata" // CronJob time zones, as upstream cmd/kube-apiserver and cmd/kube-controller-manager

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream
	"k8s.io/component-base/version"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

const usage = `usage: testenv <command> [flags]

commands:
  up                        start etcd, kube-apiserver and kube-controller-manager on 127.0.0.1
                            (run "testenv up -h" for its flags)
  kube-apiserver            run the upstream kube-apiserver (all upstream flags)
  kube-controller-manager   run the upstream kube-controller-manager (all upstream flags)
  version                   print the compiled-in Kubernetes version
  promcheck                 parse and lint the Prometheus text on stdin; print JSON
  otlpsink                  receive OTLP/HTTP traces on 127.0.0.1; print each span as JSON
`

func main() {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	args := os.Args[1:]
	if name != "kube-apiserver" && name != "kube-controller-manager" {
		if len(args) == 0 {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	// The upstream cobra commands read os.Args[1:]; present them exactly the
	// arguments the upstream binary would have seen.
	os.Args = append([]string{name}, args...)

	switch name {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserverapp.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(kcmapp.NewControllerManagerCommand()))
	case "up":
		os.Exit(up(args))
	case "promcheck":
		os.Exit(promcheck(os.Stdin, os.Stdout, os.Stderr))
	case "otlpsink":
		os.Exit(otlpsink(args))
	case "version", "--version", "-version":
		v := version.Get()
		fmt.Printf("testenv %s (kube-apiserver, kube-controller-manager; etcd %s; %s)\n", v.GitVersion, etcdVersion(), v.GoVersion)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "testenv: unknown command %q\n\n%s", name, usage)
		os.Exit(2)
	}
}
