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
	"k8s.io/apimachinery/pkg/runtime"
	k8swatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
)

// Options configure a Discoverer.
type Options struct {
	// Config is the config file's kubernetes section (defaults applied).
	Config config.Kubernetes
	// Profiles are the loaded knee profiles by name (watch.LoadProfiles).
	Profiles map[string]*knee.Profile
	// SLO is what attainment is measured against without a profile.
	SLO knee.SLO
	// Sink receives every new target set, in replica order; usually
	// watch.Watcher.SetTargets (plus any static targets). An error is
	// logged and the next change tries again.
	Sink func([]watch.Target) error
	// ModelOf returns the model a replica's engine last reported, so a pod
	// that declares no model still gets the profile matching its model once
	// the engine has been scraped. Nil: only the declared model is used.
	ModelOf func(replica string) string
	// ModelCheck is how often the replicas still waiting for their engine's
	// model are looked up in ModelOf (in memory, no API call): the target
	// set is rebuilt as soon as one is known, not on a fixed refresh.
	// Default 1s.
	ModelCheck time.Duration
	// SyncWarning is how long the first list of pods may take before a
	// warning says so, and how often it repeats: without permission to
	// list pods, informers retry forever. Default 30s.
	SyncWarning time.Duration
	// RetryMax caps the wait between retries of a list or watch the API
	// server could not answer (down, restarting, overloaded). client-go's
	// own backoff grows to 30 s (60 s with its jitter) over an outage;
	// kneewatch retries those calls itself, from 250 ms doubling up to
	// RetryMax, so discovery is current within about RetryMax of the API
	// server's return. Default 2s.
	RetryMax time.Duration
	Logger   *slog.Logger
	// Now is the clock of the health metrics (default time.Now).
	Now func() time.Time
}

// Discoverer keeps the target set in step with the cluster's serving pods.
type Discoverer struct {
	opts      Options
	mapper    mapper
	serving   []*source // one per watched namespace
	exporters *source   // nil without DCGM discovery
	changed   chan struct{}
	health    *health

	mu       sync.Mutex
	current  []watch.Target
	key      string // fingerprint of current, to skip no-op updates
	problems []string
	counts   PodCounts
	awaiting []string // replicas whose profile waits for their engine's model
	started  bool
	synced   bool // the first target set was handed to the sink
}

// source is one informer: the serving pods of one namespace, or the
// dcgm-exporter pods.
type source struct {
	role      string // roleServing or roleDCGM
	namespace string // "" for every namespace
	informer  cache.SharedIndexInformer
	lister    corelisters.PodLister
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
	if opts.ModelCheck <= 0 {
		opts.ModelCheck = time.Second
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
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
		health:  newHealth(opts.Logger, opts.Now),
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
		src, err := d.watchPods(client, roleServing, ns, cfg.LabelSelector)
		if err != nil {
			return nil, err
		}
		d.serving = append(d.serving, src)
	}
	if dc := cfg.DCGM; dc != nil {
		if d.mapper.dcgm, err = collector.NewHTTPClient(config.DefaultHTTPClient().HTTPClientConfig, "dcgm-exporter"); err != nil {
			return nil, err
		}
		if d.exporters, err = d.watchPods(client, roleDCGM, dc.Namespace, dc.LabelSelector); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// watchPods sets up an informer on the pods of one namespace matching
// selector, filtered by the API server, that signals every change. Its
// list and watch calls go through the health tracker (see instrument).
func (d *Discoverer) watchPods(client kubernetes.Interface, role, namespace, selector string) (*source, error) {
	api := client.CoreV1().Pods(namespace)
	tweak := func(o metav1.ListOptions) metav1.ListOptions {
		o.LabelSelector = selector
		return o
	}
	src := &source{role: role, namespace: namespace}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return instrument(ctx, d, src, func() (runtime.Object, error) { return api.List(ctx, tweak(o)) })
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (k8swatch.Interface, error) {
			return instrument(ctx, d, src, func() (k8swatch.Interface, error) { return api.Watch(ctx, tweak(o)) })
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	// Keep only what the mapping reads: a big cluster's pod specs are large.
	if err := inf.SetTransform(slimPod); err != nil {
		return nil, err
	}
	// client-go's default handler logs every failed list or watch, retry
	// after retry; instrument has recorded it, and the health tracker logs
	// each change of state once.
	if err := inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}); err != nil {
		return nil, err
	}
	notify := func() {
		d.health.event(src)
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
	src.informer = inf
	src.lister = corelisters.NewPodLister(inf.GetIndexer())
	d.health.add(src)
	return src, nil
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

// Run starts the informers, waits for the serving pods' first list,
// publishes the first target set, and then rebuilds it on every pod change
// (and as soon as a replica's engine reports the model its profile waits
// for) until ctx ends. The dcgm-exporter pods are not waited for: without
// them (no permission in their namespace, say) the replicas are evaluated
// without their GPU metrics, and join them once they are listed.
func (d *Discoverer) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("discovery: Run called twice")
	}
	d.started = true
	d.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, src := range d.sources() {
		wg.Go(func() { src.informer.RunWithContext(ctx) })
	}
	if !d.waitForSync(ctx) {
		return nil
	}
	d.opts.Logger.Info("kubernetes discovery synced", "namespaces", d.opts.Config.Namespaces, "label_selector", d.opts.Config.LabelSelector)
	d.reconcile(true)

	check := time.NewTicker(d.opts.ModelCheck)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.changed:
		case <-check.C:
			if !d.modelLearned() {
				continue
			}
		}
		d.reconcile(false)
	}
}

// sources lists every informer.
func (d *Discoverer) sources() []*source {
	if d.exporters == nil {
		return d.serving
	}
	return append(slices.Clone(d.serving), d.exporters)
}

// modelLearned reports whether a replica waiting for its engine's model
// (to match its profile) now has one.
func (d *Discoverer) modelLearned() bool {
	if d.opts.ModelOf == nil {
		return false
	}
	d.mu.Lock()
	awaiting := d.awaiting
	d.mu.Unlock()
	for _, r := range awaiting {
		if d.opts.ModelOf(r) != "" {
			return true
		}
	}
	return false
}

// waitForSync waits for the first list of every serving-pod informer,
// warning every SyncWarning while it has not come; false means ctx ended
// first.
func (d *Discoverer) waitForSync(ctx context.Context) bool {
	for _, src := range d.serving {
		for {
			wait, cancel := context.WithTimeout(ctx, d.opts.SyncWarning)
			synced := cache.WaitForCacheSync(wait.Done(), src.informer.HasSynced)
			cancel()
			if synced {
				break
			}
			if ctx.Err() != nil {
				return false
			}
			d.opts.Logger.Warn("kubernetes discovery has not listed pods yet: is the API server reachable, and may kneewatch get, list and watch pods there?",
				"namespace", namespaceName(src.namespace), "label_selector", d.opts.Config.LabelSelector, "waited", d.opts.SyncWarning,
				"last_error", d.health.lastError(src))
		}
	}
	return true
}

// namespaceName names a watched namespace in logs.
func namespaceName(ns string) string {
	if ns == metav1.NamespaceAll {
		return "(all namespaces)"
	}
	return ns
}

// reconcile rebuilds the target set from the informers' caches and hands it
// to the sink when it differs from the last one (always, when first).
func (d *Discoverer) reconcile(first bool) {
	var pods, exporters []*corev1.Pod
	for _, src := range d.serving {
		ps, err := src.lister.List(labels.Everything())
		if err != nil {
			d.opts.Logger.Error("listing cached pods", "err", err)
			return
		}
		pods = append(pods, ps...)
	}
	if d.exporters != nil {
		var err error
		if exporters, err = d.exporters.lister.List(labels.Everything()); err != nil {
			d.opts.Logger.Error("listing cached dcgm-exporter pods", "err", err)
			return
		}
	}
	res := d.mapper.targets(pods, exporters)
	targets, problems, counts, awaiting := res.targets, res.problems, res.counts, res.awaiting
	key := fingerprint(targets)
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}

	d.mu.Lock()
	newProblems := !slices.Equal(msgs, d.problems)
	d.problems = msgs
	d.counts = counts
	d.awaiting = awaiting
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
	d.synced = true
	d.mu.Unlock()
	d.opts.Logger.Info("discovered targets", "replicas", len(targets), "unready_pods", counts.Unready, "pending_pods", counts.Pending)
}

// Targets returns the last target set handed to the sink.
func (d *Discoverer) Targets() []watch.Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.current)
}

// Synced reports whether discovery has handed a target set, built from a
// complete list of the serving pods, to the sink at least once: until then
// kneewatch watches only its static targets and is not ready.
func (d *Discoverer) Synced() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.synced
}

// Ready is Synced as /-/ready reads it: nil once synced, else why not.
func (d *Discoverer) Ready() error {
	if d.Synced() {
		return nil
	}
	return errors.New("kubernetes discovery has not listed the serving pods yet (see kneewatch_discovery_synced and the log)")
}

// Counts returns the pods of the last rebuild by state.
func (d *Discoverer) Counts() PodCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts
}

// Problems returns the problems found in the last rebuild, one a line.
func (d *Discoverer) Problems() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.problems)
}

// fingerprint identifies a target set by everything a target carries except
// its HTTP clients, which are shared and never change.
func fingerprint(targets []watch.Target) string {
	var b strings.Builder
	for _, t := range targets {
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%s|%s|%s", t.Replica, t.Namespace, t.Pod, t.MetricsURL, t.Model, t.Engine, t.ProfileName, t.OpenAIURL)
		if t.DCGM != nil {
			fmt.Fprintf(&b, "|%s|%v", t.DCGM.URL, t.DCGM.Selectors)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
