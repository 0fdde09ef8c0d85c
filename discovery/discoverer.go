package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
)

// Options configure a Discoverer.
type Options struct {
	// Config is the config file's kubernetes section (defaults applied).
	Config config.Kubernetes
	// Profiles are the loaded knee profiles by name (collector.LoadProfiles).
	Profiles map[string]*knee.Profile
	// SLO is what attainment is measured against without a profile.
	SLO knee.SLO
	// Sink receives every new target set, in replica order; usually
	// collector.Watcher.SetTargets (plus any static targets). An error is
	// logged and the next change tries again.
	Sink func([]collector.Target) error
	// ModelOf returns the model a replica's engine last reported, so a pod
	// without a model label still gets the profile matching its model once
	// the engine has been scraped. Nil: only the model label is used.
	ModelOf func(replica string) string
	// Refresh is how often the target set is rebuilt without a pod change,
	// to pick up models learned through ModelOf. Default 30s.
	Refresh time.Duration
	// SyncWarning is how long the first list of pods may take before a
	// warning says so, and how often it repeats: without permission to
	// list pods, informers retry forever. Default 30s.
	SyncWarning time.Duration
	Logger      *slog.Logger
}

// Discoverer keeps the target set in step with the cluster's serving pods.
type Discoverer struct {
	opts      Options
	mapper    mapper
	factories []informers.SharedInformerFactory
	pods      []corelisters.PodLister
	exporters corelisters.PodLister // nil without DCGM discovery
	changed   chan struct{}

	mu       sync.Mutex
	current  []collector.Target
	key      string // fingerprint of current, to skip no-op updates
	problems []string
	started  bool
}

// New prepares informers for the serving pods (and the dcgm-exporter pods)
// that client can see. Nothing is contacted until Run.
func New(client kubernetes.Interface, opts Options) (*Discoverer, error) {
	if opts.Sink == nil {
		return nil, errors.New("discovery: a sink for the targets is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 30 * time.Second
	}
	if opts.SyncWarning <= 0 {
		opts.SyncWarning = 30 * time.Second
	}
	cfg := opts.Config
	if _, err := labels.Parse(cfg.LabelSelector); err != nil || strings.TrimSpace(cfg.LabelSelector) == "" {
		return nil, fmt.Errorf("kubernetes.label_selector %q: want a non-empty label selector", cfg.LabelSelector)
	}
	httpClient, err := collector.NewHTTPClient(cfg.HTTPClient.HTTPClientConfig, "kubernetes")
	if err != nil {
		return nil, fmt.Errorf("kubernetes.http_client: %w", err)
	}
	d := &Discoverer{
		opts:    opts,
		changed: make(chan struct{}, 1),
		mapper: mapper{
			cfg:      cfg,
			profiles: opts.Profiles,
			slo:      opts.SLO,
			client:   httpClient,
			modelOf:  opts.ModelOf,
		},
	}
	namespaces := cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		lister, err := d.watchPods(client, ns, cfg.LabelSelector)
		if err != nil {
			return nil, err
		}
		d.pods = append(d.pods, lister)
	}
	if dc := cfg.DCGM; dc != nil {
		if d.mapper.dcgm, err = collector.NewHTTPClient(config.DefaultHTTPClient().HTTPClientConfig, "dcgm-exporter"); err != nil {
			return nil, err
		}
		if d.exporters, err = d.watchPods(client, dc.Namespace, dc.LabelSelector); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// watchPods sets up an informer on the pods of one namespace matching
// selector, filtered by the API server, that signals every change.
func (d *Discoverer) watchPods(client kubernetes.Interface, namespace, selector string) (corelisters.PodLister, error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	pods := f.Core().V1().Pods()
	inf := pods.Informer()
	// Keep only what the mapping reads: a big cluster's pod specs are large.
	if err := inf.SetTransform(slimPod); err != nil {
		return nil, err
	}
	notify := func() {
		select {
		case d.changed <- struct{}{}:
		default: // a rebuild is already due
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return nil, err
	}
	d.factories = append(d.factories, f)
	return pods.Lister(), nil
}

// slimPod drops the parts of a pod the mapping never reads.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone: keep as is
	}
	pod.ManagedFields = nil
	pod.Spec.Containers = nil
	pod.Spec.InitContainers = nil
	pod.Spec.Volumes = nil
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = nil
	return pod, nil
}

// Run starts the informers, waits for their first list, publishes the
// first target set, and then rebuilds it on every pod change (and every
// Refresh) until ctx ends.
func (d *Discoverer) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("discovery: Run called twice")
	}
	d.started = true
	d.mu.Unlock()

	for _, f := range d.factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range d.factories {
			f.Shutdown()
		}
	}()
	if !d.waitForSync(ctx) {
		return nil
	}
	d.opts.Logger.Info("kubernetes discovery synced", "namespaces", d.opts.Config.Namespaces, "label_selector", d.opts.Config.LabelSelector)
	d.reconcile(true)

	tick := time.NewTicker(d.opts.Refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.changed:
		case <-tick.C:
		}
		d.reconcile(false)
	}
}

// waitForSync waits for every informer's first list, warning every
// SyncWarning while it has not come; false means ctx ended first.
func (d *Discoverer) waitForSync(ctx context.Context) bool {
	for _, f := range d.factories {
		for {
			wait, cancel := context.WithTimeout(ctx, d.opts.SyncWarning)
			synced := true
			for _, ok := range f.WaitForCacheSync(wait.Done()) {
				synced = synced && ok
			}
			cancel()
			if synced {
				break
			}
			if ctx.Err() != nil {
				return false
			}
			d.opts.Logger.Warn("kubernetes discovery has not listed pods yet: is the API server reachable, and may kneewatch get, list and watch pods there?",
				"namespaces", d.opts.Config.Namespaces, "label_selector", d.opts.Config.LabelSelector, "waited", d.opts.SyncWarning)
		}
	}
	return true
}

// reconcile rebuilds the target set from the informers' caches and hands it
// to the sink when it differs from the last one (always, when first).
func (d *Discoverer) reconcile(first bool) {
	var pods, exporters []*corev1.Pod
	for _, l := range d.pods {
		ps, err := l.List(labels.Everything())
		if err != nil {
			d.opts.Logger.Error("listing cached pods", "err", err)
			return
		}
		pods = append(pods, ps...)
	}
	if d.exporters != nil {
		var err error
		if exporters, err = d.exporters.List(labels.Everything()); err != nil {
			d.opts.Logger.Error("listing cached dcgm-exporter pods", "err", err)
			return
		}
	}
	targets, problems := d.mapper.targets(pods, exporters)
	key := fingerprint(targets)
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}

	d.mu.Lock()
	newProblems := !slices.Equal(msgs, d.problems)
	d.problems = msgs
	same := !first && key == d.key
	d.mu.Unlock()
	if newProblems {
		for _, p := range problems {
			d.opts.Logger.Warn("serving pod", "pod", p.Pod, "problem", p.Message)
		}
	}
	if same {
		return
	}
	if err := d.opts.Sink(targets); err != nil {
		d.opts.Logger.Error("applying discovered targets", "err", err)
		return
	}
	d.mu.Lock()
	d.current, d.key = targets, key
	d.mu.Unlock()
	d.opts.Logger.Info("discovered targets", "replicas", len(targets))
}

// Targets returns the last target set handed to the sink.
func (d *Discoverer) Targets() []collector.Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.current)
}

// Problems returns the problems found in the last rebuild, one a line.
func (d *Discoverer) Problems() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.problems)
}

// fingerprint identifies a target set by everything a target carries except
// its HTTP clients, which are shared and never change.
func fingerprint(targets []collector.Target) string {
	var b strings.Builder
	for _, t := range targets {
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%s", t.Replica, t.MetricsURL, t.Model, t.Engine, t.ProfileName, t.OpenAIURL)
		if t.DCGM != nil {
			fmt.Fprintf(&b, "|%s|%v", t.DCGM.URL, t.DCGM.Selectors)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
