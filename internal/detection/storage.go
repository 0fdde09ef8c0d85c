package detection

import "github.com/kneewatch/kneewatch/internal/promstore"

// store is the run's in-memory Prometheus storage: the scraped series and
// the recording rules' output, appended in time order and read by
// Prometheus's PromQL engine (see internal/promstore).
type store = promstore.Store

func newStore() *store { return promstore.New() }

// staleNaN is Prometheus's staleness marker: a series that stopped being
// scraped (or returned by a rule) ends there instead of lingering for the
// 5-minute lookback.
var staleNaN = promstore.StaleNaN
