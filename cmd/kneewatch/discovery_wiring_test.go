package main

import (
	"context"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/watch"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiscoveryRunner(t *testing.T) {
	w := watch.NewWatcher(watch.WatcherOptions{})
	logger := slog.New(slog.DiscardHandler)

	t.Run("a config without a kubernetes section runs no discovery", func(t *testing.T) {
		cfg := config.DefaultConfig()
		run, err := discoveryRunner(&cfg, nil, w, w.SetTargets, nil, logger)
		if run != nil || err != nil {
			t.Fatalf("discoveryRunner = %v, %v; want nil, nil", run != nil, err)
		}
	})

	t.Run("a missing kubeconfig is an error naming the setting", func(t *testing.T) {
		cfg := config.DefaultConfig()
		k := config.DefaultKubernetes()
		k.LabelSelector = "app=llm"
		k.Kubeconfig = filepath.Join(t.TempDir(), "missing-kubeconfig")
		cfg.Kubernetes = &k
		run, err := discoveryRunner(&cfg, nil, w, w.SetTargets, nil, logger)
		if run != nil || err == nil || !strings.Contains(err.Error(), "kubernetes.kubeconfig") {
			t.Fatalf("discoveryRunner = %v, %v; want an error naming kubernetes.kubeconfig", run != nil, err)
		}
	})

	t.Run("a valid kubeconfig gives a runner", func(t *testing.T) {
		cfg := config.DefaultConfig()
		k := config.DefaultKubernetes()
		k.LabelSelector = "app=llm"
		k.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
		kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
		if err := os.WriteFile(k.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Kubernetes = &k
		run, err := discoveryRunner(&cfg, nil, w, w.SetTargets, nil, logger)
		if run == nil || err != nil {
			t.Fatalf("discoveryRunner = %v, %v; want a runner", run != nil, err)
		}

		// Nothing listens there: discovery never lists the pods, and serve
		// is not ready even once the watcher has evaluated.
		w := watch.NewWatcher(watch.WatcherOptions{})
		w.EvaluateOnce(context.Background())
		if err := serveReady(w, nil)(); err != nil {
			t.Errorf("without discovery, ready after an evaluation = %v, want nil", err)
		}
		if err := serveReady(w, run)(); err == nil || !strings.Contains(err.Error(), "has not listed the serving pods") {
			t.Errorf("with discovery that never listed pods, ready = %v, want an error naming discovery", err)
		}
	})
}
