package discovery

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/catalog"
)

var (
	podsDesc     = catalog.MetricDiscoveryPods.Desc()
	syncedDesc   = catalog.MetricDiscoverySynced.Desc()
	lastSyncDesc = catalog.MetricDiscoveryLastSync.Desc()
	errorsDesc   = catalog.MetricDiscoveryErrors.Desc()
)

// Describe implements prometheus.Collector.
func (d *Discoverer) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{podsDesc, syncedDesc, lastSyncDesc, errorsDesc} {
		ch <- desc
	}
}

// Collect implements prometheus.Collector: discovery's health, read at
// scrape time.
func (d *Discoverer) Collect(ch chan<- prometheus.Metric) {
	c := d.Counts()
	for _, s := range []struct {
		state string
		n     int
	}{{"ready", c.Ready}, {"unready", c.Unready}, {"pending", c.Pending}, {"terminating", c.Terminating}, {"finished", c.Finished}} {
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(s.n), s.state)
	}
	for _, r := range d.health.roles() {
		synced := 0.0
		if r.synced {
			synced = 1
		}
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, synced, r.role)
		if !r.lastOK.IsZero() {
			ch <- prometheus.MustNewConstMetric(lastSyncDesc, prometheus.GaugeValue, float64(r.lastOK.UnixNano())/1e9, r.role)
		}
		for _, kind := range errorKinds {
			ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, r.errors[kind], r.role, kind)
		}
	}
}
