package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	etcdversion "go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/embed"
)

func etcdVersion() string { return etcdversion.Version }

// startEtcd runs a single-member etcd inside this process. Client and peer
// listeners use port 0 (the kernel picks a free port); the peer port is never
// contacted by a single member. It returns the client URL.
func startEtcd(dir, logFile string, timeout time.Duration) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = filepath.Join(dir, "etcd")
	zero := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{zero}
	cfg.AdvertiseClientUrls = []url.URL{zero}
	cfg.ListenPeerUrls = []url.URL{zero}
	cfg.AdvertisePeerUrls = []url.URL{zero}
	cfg.InitialCluster = cfg.Name + "=" + zero.String()
	// The gRPC gateway (etcd's HTTP/JSON API, unused by kube-apiserver) dials
	// the configured client address, which is port 0 here.
	cfg.EnableGRPCGateway = false
	cfg.LogLevel = "warn"
	// NewConfig leaves this at 0, which logs every request as expensive.
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	cfg.LogOutputs = []string{logFile}
	// Test data only: skip fsync, which dominates etcd latency on slow disks.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed: %w", err)
	case <-time.After(timeout):
		e.Server.Stop()
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after %s (see %s)", timeout, logFile)
	}
	return e, "http://" + e.Clients[0].Addr().String(), nil
}

type etcdHandle struct{ e *embed.Etcd }

func (h *etcdHandle) Err() <-chan error { return h.e.Err() }

func (h *etcdHandle) close() {
	done := make(chan struct{})
	go func() { h.e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
