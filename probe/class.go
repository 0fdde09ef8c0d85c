package probe

// Class is why a probe failed; the empty Class is a success.
type Class string

// The failure classes, as the class label of kneewatch_probe_failures_total.
const (
	// ClassConnect: no connection was made (refused, DNS, unreachable, TLS
	// handshake, or the timeout hit before a connection was made).
	ClassConnect Class = "connect"
	// ClassTimeout: connected, but the whole stream did not arrive within
	// the probe timeout (a stalled engine lands here).
	ClassTimeout Class = "timeout"
	// ClassHTTP4xx and ClassHTTP5xx: the server answered with that status.
	ClassHTTP4xx Class = "http_4xx"
	ClassHTTP5xx Class = "http_5xx"
	// ClassBadStream: the answer was not a well-formed event stream ending in
	// [DONE]: wrong content type, a chunk that is not JSON, an error event,
	// a cut connection, or an oversized body.
	ClassBadStream Class = "bad_stream"
	// ClassEmpty: a well-formed stream with no output token.
	ClassEmpty Class = "empty"
	// ClassRedirect: the server redirected to another host or scheme, which
	// probes never follow (the API key must not travel elsewhere).
	ClassRedirect Class = "redirect"
)

// Classes lists every failure class, in exposition order.
var Classes = []Class{ClassConnect, ClassTimeout, ClassHTTP4xx, ClassHTTP5xx, ClassBadStream, ClassEmpty, ClassRedirect}

// Reason is why a scheduled probe was not sent.
type Reason string

// The skip reasons, as the reason label of kneewatch_probe_skipped_total.
const (
	// ReasonPastKnee: the latest evaluation put the replica past its knee
	// (headroom < 0) and probes.skip_past_knee is on.
	ReasonPastKnee Reason = "past_knee"
	// ReasonQueueGrowing: the replica's waiting queue is non-empty and
	// growing over the window, and probes.skip_queue_growing is on.
	ReasonQueueGrowing Reason = "queue_growing"
	// ReasonBudget: the probe would take the replica's probe output tokens
	// over probes.load_ratio_cap of its knee throughput, or the replica has
	// no knee throughput to budget against.
	ReasonBudget Reason = "budget"
	// ReasonInFlight: the previous probe of the replica was still running
	// when this one was due.
	ReasonInFlight Reason = "in_flight"
)

// Reasons lists every skip reason, in exposition order.
var Reasons = []Reason{ReasonPastKnee, ReasonQueueGrowing, ReasonBudget, ReasonInFlight}
