package knee

import "math"

// Dimension is one way of measuring how close a replica is to its knee.
// Each gives a ratio that is 1 at the knee; headroom is 1 minus the largest.
type Dimension int

// The dimensions, in the order ties are broken.
const (
	// DimensionLoad: in-flight requests ÷ knee concurrency.
	DimensionLoad Dimension = iota
	// DimensionThroughput: output or prompt tokens/s, whichever is further
	// along, against the knee's, on the load scale (see Evaluate).
	DimensionThroughput
	// DimensionKVCache: KV-cache usage ÷ the usage that counts as full for
	// this knee (see Evaluate).
	DimensionKVCache
	// DimensionEffectiveLoad: the load ratio corrected for a replica slower
	// than its profile (see Evaluate).
	DimensionEffectiveLoad
	// NumDimensions counts the dimensions; Ratios is indexed by Dimension.
	NumDimensions
)

// DimensionNone is the Dimension of a Result that is not OK.
const DimensionNone Dimension = -1

// String is the dimension's label value in metrics.
func (d Dimension) String() string {
	switch d {
	case DimensionLoad:
		return "load"
	case DimensionThroughput:
		return "throughput"
	case DimensionKVCache:
		return "kv_cache"
	case DimensionEffectiveLoad:
		return "effective_load"
	}
	return ""
}

// Ratios holds each dimension's knee ratio, indexed by Dimension; unknown
// where it could not be computed or does not apply.
type Ratios [NumDimensions]float64

// Reasons a Result is not OK, machine-friendly for a metric label or a log field.
const (
	ReasonNoProfile          = "no_profile"          // the replica has no knee profile
	ReasonInvalidProfile     = "invalid_profile"     // the profile's knee concurrency is not > 0
	ReasonNoEngineMetrics    = "no_engine_metrics"   // in-flight load is unknown
	ReasonInvalidObservation = "invalid_observation" // in-flight load is negative, or the observation reads off any scale (see Evaluate)
)

// Defaults for Options.
const (
	DefaultEffectiveLoadMinRatio = 0.25
	// minEfficiency bounds the effective-load correction at 10× the load
	// ratio, so a replica that stalls with requests in flight reads as far
	// past its knee rather than infinitely so.
	minEfficiency = 0.1
)

// Options tunes Evaluate. The zero value means the defaults.
type Options struct {
	// KVSaturation is the KV-cache usage that counts as full when the
	// knee is compute-bound (default KVSaturation, 0.9). Values ≤ 0 mean the default.
	KVSaturation float64
	// EffectiveLoadMinRatio is the load ratio from which the effective-load
	// dimension applies (default 0.25): at lighter load, throughput is too
	// small and noisy to judge speed by, and headroom is ample anyway.
	// Values ≤ 0 mean the default; +Inf turns the dimension off.
	EffectiveLoadMinRatio float64
}

func (o Options) kvSaturation() float64 {
	if o.KVSaturation > 0 {
		return o.KVSaturation
	}
	return KVSaturation
}

func (o Options) effectiveLoadMinRatio() float64 {
	if o.EffectiveLoadMinRatio > 0 {
		return o.EffectiveLoadMinRatio
	}
	return DefaultEffectiveLoadMinRatio
}

// Result is one replica's evaluation. When OK is false, Reason says why and
// every other value is unknown: nothing is made up. When OK is true, each
// value is known unless the inputs it needs were unknown (see Known).
type Result struct {
	OK     bool
	Reason string // one of the Reason constants when not OK; empty when OK

	Load      float64   // mean in-flight requests
	Ratios    Ratios    // per-dimension knee ratios
	Headroom  float64   // 1 − the largest known ratio: 1 idle, 0 at the knee, < 0 past it
	Dimension Dimension // the dimension that set Headroom

	// SLOAttainment approximates the share of requests meeting every SLO as
	// min(TTFT attainment, TPOT attainment); see Evaluate.
	SLOAttainment          float64
	GoodputTokensPerSecond float64 // output tokens/s × SLOAttainment
	OutputTokensPerSecond  float64 // as observed, kept for the fleet summary

	// LimitingResource is what limits the replica: the KV cache when the KV
	// dimension set the headroom, KV usage is at saturation or requests are
	// being preempted, else the resource that limits its knee.
	LimitingResource Resource

	Knee Knee // the knee the replica was compared with

	// Expected is the profile's curve at the observed load, and
	// ThroughputEfficiency the observed output tokens/s ÷ what the curve
	// expects of the running batch as it was sampled (Expected's when the
	// batch is unknown): below 1, the replica makes fewer tokens at this
	// load than when it was swept (a slower GPU, or heavier requests than
	// the profile's mix).
	Expected             CurvePoint
	ThroughputEfficiency float64

	// TTFTSLORatio and TPOTSLORatio are the observed latency at the SLO's
	// quantile ÷ its threshold: above 1 the SLO is being missed now.
	// Unknown when the SLO quantile is not one observed (0.5, 0.9, 0.99).
	TTFTSLORatio float64
	TPOTSLORatio float64

	// KVCacheReference is the KV-cache usage at which the kv_cache ratio
	// reads 1, exported so a ruler can recompute that ratio from the raw
	// engine series (see rules' ruler group).
	KVCacheReference float64

	// Leading indicators.
	KVPressure           float64 // KV usage − the knee's KV usage; > 0 is fuller than at the knee
	PreemptionsPerSecond float64
	QueueGrowthPerSecond float64
	PrefillShare         float64 // prompt ÷ (prompt + output) tokens/s
	// MixDrift is the larger relative distance of the observed mean prompt
	// and output tokens per request from the profile's means,
	// max(|observed − profile| ÷ profile), over the sides both know.
	// Unknown when the means are taken over fewer than MinMixRequests
	// requests (Observation.MixRequests).
	MixDrift float64
}

// Evaluate compares one replica's observation with its knee profile. It is
// a pure function: no I/O, no clock, no allocation.
//
// The knee is the profile's, moved with the mix when the profile has a
// mix model (see MixModel) and the observed mean prompt or output tokens
// per request drift from the profile's by more than noise (mixNoiseBand,
// see Profile.mixShiftAt), or the observed p99 prompt (PromptTokensP99)
// outgrows the profile's 99.9th percentile (P999PromptTokens) by more
// than tailNoiseBand, or past its own prompt distribution's p99 by more
// than chance explains (Profile.heavyTailGrowth). Result.Knee is the knee
// used, moved or not.
// Longer prompts are not the only shift that costs capacity: chat traffic
// turning toward code-like requests with longer outputs at a constant
// request rate breaks the SLO while the profile's knee still shows ~0.2 of
// headroom; the moved knee does not.
//
// Headroom is 1 minus the largest of these ratios, each 1 at the knee:
//   - load: in-flight load ÷ knee concurrency (the moved knee). Always
//     present when OK.
//   - throughput: output tokens/s read on the load scale: below the knee's
//     output rate, the concurrency at which the profile's curve makes that
//     rate ÷ the knee concurrency; from the knee's rate up, the rate ÷ the
//     knee's rate. A replica behaving like its profile has equal load and
//     throughput ratios; the plain rate ÷ knee rate would not, because
//     throughput is concave in concurrency. Prompt tokens/s are read the
//     same way, on the profile's curve of requests/s × its mean prompt, and
//     the larger of the two counts. (With a moved knee, both rates are first
//     divided by the moved knee's rate over the profile knee's, request
//     rate × mean output or × mean prompt, so the moved knee reads 1.) When the mix shifts to longer prompts
//     (RAG traffic on a chat replica), prefill work grows while output
//     tokens and in-flight requests barely move, and the prefill steps it
//     adds to every decode are what break a TPOT-bound knee. On the
//     simulator, a chat replica whose traffic turns 10% RAG at a constant
//     request rate loses two thirds of its knee; the prompt rate read on
//     the chat curve tracks that within ~0.05, load and output rates do not.
//     The prompt side counts only when the observed mean prompt is more
//     than 25% longer than the profile's: at the profile's own mix it
//     measures the same requests as the load, only noisier, since prefill
//     tokens are counted the moment a few long prompts arrive.
//   - kv_cache: KV usage ÷ a reference. For a KV-bound knee the reference is
//     the knee's own KV usage: KV grows with load and the knee is where it
//     ran out. For a compute-bound knee the knee's KV usage says nothing
//     about distance (it can be 0.1 at the knee), so the reference is
//     saturation (Options.KVSaturation, or the knee's usage if higher): the
//     ratio stays small until a mix of longer contexts starts filling the
//     cache, then reaches 1 when the cache is nearly full. A KV-bound knee
//     is read against saturation too when its profile has a mix model and
//     the replica's mix is measured (see kvReference).
//   - effective_load: load ÷ the profile's knee (not moved by the mix: the
//     speed it reads already falls for heavier requests) moved by the
//     replica's speed, from
//     Options.EffectiveLoadMinRatio upward. A replica that makes fewer
//     tokens at a load than its profile did (throughput efficiency e < 1)
//     is slower (a throttled GPU) or serving heavier requests, and its knee
//     has moved down. Two estimates of where to, the tighter one counting:
//     in proportion (e × the knee: throughput at a load scales with speed),
//     and on the profile's latency curve (where latencies stretched by 1/e
//     reach the SLO, which is lower when the per-step cost that does not
//     grow with the batch is a large part of the threshold), or where the
//     profile's speed model puts the knee of a GPU at speed e (see
//     speedKnee). e is clamped to 0.1..1, so the ratio is at most 10× the
//     load ratio and a faster replica gets no bonus.
//
// Not a dimension: the offered request rate (finished requests/s plus the
// waiting queue's growth) ÷ the moved knee's rate, counted past 1, so a
// flash crowd on a low-rate replica would read past the knee before its
// queue shows. Tried on the tune half (2026-12-07, KNEEWATCH_TUNE_SHIPPED):
// it paged 4 of 46 safe scenarios (2 without it) and no early-possible
// breach more (17 of 19), and plateau-safe's headroom error p95 went 0.060
// to 0.074; counted past 1.15 instead, 4 safe scenarios and 0.065. At a
// few requests a minute the rate is as noisy as the queue it would get
// ahead of.
//
// Goodput is output tokens/s × min(TTFT attainment, TPOT attainment). vLLM's
// bench counts goodput as the tokens of requests that met every SLO; the
// share meeting both is at most the smaller share, and equals it when the
// requests that miss one SLO also miss the other (typical when both come
// from queueing). So this is an upper bound that is tight under saturation.
// Goodput is unknown unless both attainments and output tokens/s are known.
func Evaluate(obs Observation, p *Profile, opts Options) Result {
	if p == nil {
		return notOK(ReasonNoProfile)
	}
	kneeC := p.Knee.Concurrency
	if !Known(kneeC) || kneeC <= 0 {
		return notOK(ReasonInvalidProfile)
	}
	load := obs.Load()
	if !Known(load) {
		return notOK(ReasonNoEngineMetrics)
	}
	if load < 0 {
		return notOK(ReasonInvalidObservation)
	}

	nan := Unknown()
	// Means over too few requests are noise, not a shift in the mix: a
	// long-context replica finishing ten requests a minute read a mean
	// prompt 30% over its profile's in some windows, moved its knee and
	// counted its prompt rate as load for that minute.
	meanPrompt, meanOutput := obs.MeanPromptTokens, obs.MeanOutputTokens
	mixJudged := !Known(obs.MixRequests) || obs.MixRequests >= MinMixRequests
	if !mixJudged {
		meanPrompt, meanOutput = nan, nan
	}
	promptBand, outputBand := p.mixNoiseBands(obs.MixRequests)
	tails := [2]promptTail{{obs.PromptTokensP99, obs.MixRequests}, {obs.SpanPromptTokensP99, obs.SpanPromptRequests}}
	shift := p.mixShiftAt(meanPrompt, meanOutput, tails, promptBand, outputBand)
	r := Result{
		OK:                    true,
		Load:                  load,
		Knee:                  shift.movedKnee(p.Knee),
		OutputTokensPerSecond: nan,
		ThroughputEfficiency:  nan,
	}
	for d := range r.Ratios {
		r.Ratios[d] = nan
	}
	// A mix so far past the model's that its knee underflows (a mean
	// prompt of 1e300 tokens, from a broken histogram sum) is no reading of
	// the replica: it was an evaluation that read OK with a knee of 0 and a
	// headroom of -Inf, which the exporter drops, so no page watched it.
	if !Known(r.Knee.Concurrency) || !(r.Knee.Concurrency > 0) {
		return notOK(ReasonInvalidObservation)
	}
	r.Ratios[DimensionLoad] = load / r.Knee.Concurrency
	// The speed dimension reads the load against the profile's knee, or
	// the knee a mix raised (see mixShift.speedKneeFactor).
	raised := shift.speedKneeFactor(p.mixShiftClear(meanPrompt, meanOutput, obs.MixRequests, promptBand, outputBand))
	nominalLoad := load / (kneeC * raised)

	// Rates are read on the profile's curve after dividing out how the
	// moved knee's rates differ from the profile's, so the moved knee reads 1.
	out := obs.OutputTokensPerSecond
	if nonNegative(out) {
		r.OutputTokensPerSecond = out
		if ratio := p.throughputLoadRatio(out / (shift.rate * shift.output)); p.outputRateResolvesLoad(ratio) {
			r.Ratios[DimensionThroughput] = ratio
		}
	}
	// The prompt side counts beside a mix model too, read on the profile's
	// own curve (not divided by the moved knee's rates): the model's moved
	// knee follows a chat replica turning toward RAG too slowly (on the
	// scripted mix shift it read a knee of 57 in flight where the truth was
	// 36), and the prefill work read on the chat curve tracks the shift.
	if prompt := obs.PromptTokensPerSecond; nonNegative(prompt) && mixJudged && promptsGrew(meanPrompt, p.Workload.MeanPromptTokens) {
		r.Ratios[DimensionThroughput] = maxKnown(r.Ratios[DimensionThroughput], p.rateLoadRatio(prompt, promptRate))
	}

	kv := obs.KVCacheUsage
	kvSat := opts.kvSaturation()
	r.KVCacheReference = p.kvReference(opts, Known(obs.MeanPromptTokens) && Known(obs.MeanOutputTokens))
	if nonNegative(kv) {
		r.Ratios[DimensionKVCache] = kv / r.KVCacheReference
	}

	r.Expected = unknownCurvePoint()
	if expected, ok := p.CurveAt(load); ok {
		r.Expected = expected
		if Known(r.OutputTokensPerSecond) && expected.OutputTokensPerSecond > 0 {
			r.ThroughputEfficiency = r.OutputTokensPerSecond / expected.OutputTokensPerSecond
		}
	}
	// Speed is judged on the running batch where the profile recorded it:
	// tokens/s are made by the requests running, and a request waiting in
	// the queue makes none. Judged on in-flight requests, a queue under
	// Poisson bunching read as a slow GPU (throughput efficiency 0.6–0.8 on
	// an 8B/H100 RAG replica stepping up to 0.85 of its knee) and the
	// effective-load dimension took a third off the headroom.
	if out := r.OutputTokensPerSecond; Known(out) {
		if expected, ok := p.expectedOutput(&obs); ok && expected > 0 {
			r.ThroughputEfficiency = out / expected
		}
	}
	// A running batch read as next to nothing (a gauge of 5e-324) expects
	// next to no tokens, and the quotient overflows: no speed is read.
	r.ThroughputEfficiency = knownOrUnknown(r.ThroughputEfficiency)
	if Known(r.ThroughputEfficiency) && nominalLoad >= opts.effectiveLoadMinRatio() {
		e := min(max(r.ThroughputEfficiency, minEfficiency), 1)
		// A closed-loop knee moves down in proportion at least; a Poisson
		// knee as speedKnee reads it.
		ratio := nominalLoad / e
		if p.openLoopKnee() {
			ratio = nominalLoad
		}
		if k, ok := p.speedKnee(e); ok && k > 0 {
			ratio = max(ratio, min(load/(k*raised), nominalLoad/minEfficiency))
		}
		r.Ratios[DimensionEffectiveLoad] = ratio
	}

	// A ratio that overflowed (a KV usage of 1.8e308 over its reference)
	// reads nothing.
	for d := range r.Ratios {
		r.Ratios[d] = knownOrUnknown(r.Ratios[d])
	}
	// Ties (within rounding) go to the earlier dimension, so the label does
	// not flap between two ratios that agree.
	r.Dimension = DimensionLoad
	for d, ratio := range r.Ratios {
		if Known(ratio) && ratio > r.Ratios[r.Dimension]+1e-9 {
			r.Dimension = Dimension(d)
		}
	}
	r.Headroom = 1 - r.Ratios[r.Dimension]
	// A ratio that overflows (a rate of 1e308 read against a knee) is an
	// upstream's garbage, not a replica infinitely past its knee.
	if !Known(r.Headroom) {
		return notOK(ReasonInvalidObservation)
	}

	r.SLOAttainment, r.GoodputTokensPerSecond = goodput(&obs)
	r.TTFTSLORatio = sloRatio(obs.TTFT, p.SLO.Quantile, p.SLO.TTFT)
	r.TPOTSLORatio = sloRatio(obs.TPOT, p.SLO.Quantile, p.SLO.TPOT)

	r.KVPressure = nan
	if nonNegative(kv) {
		r.KVPressure = kv - p.Knee.KVCacheUsage
	}
	r.PreemptionsPerSecond = nan
	if nonNegative(obs.PreemptionsPerSecond) {
		r.PreemptionsPerSecond = obs.PreemptionsPerSecond
	}
	r.QueueGrowthPerSecond = nan
	if Known(obs.QueueGrowthPerSecond) {
		r.QueueGrowthPerSecond = obs.QueueGrowthPerSecond
	}
	r.PrefillShare = obs.PrefillShare()
	r.MixDrift = Unknown()
	if !Known(obs.MixRequests) || obs.MixRequests >= MinMixRequests {
		r.MixDrift = maxKnown(
			drift(obs.MeanPromptTokens, p.Workload.MeanPromptTokens),
			drift(obs.MeanOutputTokens, p.Workload.MeanOutputTokens))
	}

	r.LimitingResource = p.Knee.LimitingResource
	if r.LimitingResource != ResourceKVCache && (r.Dimension == DimensionKVCache ||
		(nonNegative(kv) && kv >= kvSat) || r.PreemptionsPerSecond > 0) {
		r.LimitingResource = ResourceKVCache
	}
	if r.LimitingResource == "" {
		r.LimitingResource = ResourceCompute
	}
	return r
}

// kvReference is the KV-cache usage at which the kv_cache ratio reads 1
// (see Evaluate): the knee's own usage for a KV-bound knee, else the
// saturation level, or the knee's usage if higher.
//
// A KV-bound knee whose profile has a mix model, on a replica whose mix is
// measured, is read against saturation too. Its KV usage is then in-flight
// requests × their context, and both halves are measured already: the load
// dimension counts the requests against a knee the mix model has moved for
// longer contexts. Against the knee's own usage, the product read the same
// load again with the noise of each window's context per request. On the
// tune half, an 8B/L4 code replica (a knee at 0.51 usage, KV-bound by its
// trial's preemptions) held at 0.81 of its knee read KV 1.0–1.58 of the
// knee's for minutes while in-flight load read 0.85–1.24 and the p99 TTFT
// stayed under a tenth of its SLO, and paged. Without a mix model, or
// without the means to read it by, the knee's own usage stays the
// reference: the KV cache is then what sees the contexts grow.
func (p *Profile) kvReference(opts Options, mixMeasured bool) float64 {
	kvBound := p.Knee.LimitingResource == ResourceKVCache && p.Knee.KVCacheUsage > 0
	if kvBound && !(mixMeasured && p.hasMixModel()) {
		return p.Knee.KVCacheUsage
	}
	return max(p.Knee.KVCacheUsage, opts.kvSaturation())
}

// notOK is a Result with every value unknown.
func notOK(reason string) Result {
	nan := Unknown()
	r := Result{
		Reason:                 reason,
		Load:                   nan,
		Headroom:               nan,
		Dimension:              DimensionNone,
		SLOAttainment:          nan,
		GoodputTokensPerSecond: nan,
		OutputTokensPerSecond:  nan,
		Knee: Knee{Concurrency: nan, OutputTokensPerSecond: nan, GoodputTokensPerSecond: nan, KVCacheUsage: nan,
			RequestsPerSecond: nan, ClosedLoopConcurrency: nan},
		Expected:             unknownCurvePoint(),
		ThroughputEfficiency: nan,
		TTFTSLORatio:         nan,
		TPOTSLORatio:         nan,
		KVPressure:           nan,
		PreemptionsPerSecond: nan,
		QueueGrowthPerSecond: nan,
		PrefillShare:         nan,
		MixDrift:             nan,
		KVCacheReference:     nan,
	}
	for d := range r.Ratios {
		r.Ratios[d] = nan
	}
	return r
}

func unknownCurvePoint() CurvePoint {
	nan := Unknown()
	return CurvePoint{Concurrency: nan, OutputTokensPerSecond: nan, GoodputTokensPerSecond: nan, KVCacheUsage: nan, TTFTP99: nan, TPOTP99: nan}
}

// goodput returns the joint SLO attainment (approximated, see Evaluate) and
// the goodput, or unknowns.
func goodput(obs *Observation) (attainment, tokensPerSecond float64) {
	ttft, tpot, out := obs.TTFTAttainment, obs.TPOTAttainment, obs.OutputTokensPerSecond
	if !isRatio(ttft) || !isRatio(tpot) {
		return Unknown(), Unknown()
	}
	attainment = min(ttft, tpot)
	if !nonNegative(out) {
		return attainment, Unknown()
	}
	return attainment, out * attainment
}

func isRatio(v float64) bool { return Known(v) && v >= 0 && v <= 1 }

// sloRatio is the observed latency at the SLO quantile ÷ the threshold.
func sloRatio(l LatencyQuantiles, q float64, threshold Duration) float64 {
	v := l.At(q)
	if !nonNegative(v) || threshold <= 0 {
		return Unknown()
	}
	return knownOrUnknown(v / threshold.Seconds())
}

// knownOrUnknown is v, or unknown when a quotient of finite inputs
// overflowed (a latency of 1.8e308 s over a 50 ms threshold): an
// exported +Inf is a wrong number, not a large one.
func knownOrUnknown(v float64) float64 {
	if !Known(v) {
		return Unknown()
	}
	return v
}

// drift is |observed − profile| ÷ profile, unknown unless both are known
// and the profile's mean is > 0.
func drift(observed, profile float64) float64 {
	if !nonNegative(observed) || !Known(profile) || profile <= 0 {
		return Unknown()
	}
	return knownOrUnknown(math.Abs(observed-profile) / profile)
}

// maxKnown is the larger of the known values among a and b.
func maxKnown(a, b float64) float64 {
	switch {
	case !Known(a):
		return b
	case !Known(b):
		return a
	}
	return max(a, b)
}

// MinMixRequests is the fewest finished requests a window's mean prompt
// and output lengths are compared with the profile's over. Fewer is noise,
// not drift: an idle replica whose window held one 16-token probe read a
// drift of 0.92. Drawn from the presets' own mixes, the drift of a mean
// over 20 requests exceeds the drift alert's 0.3 in 29% of windows for
// chat (heavy-tailed outputs), under 10% for code, rag, summarize and
// long-context; over 10 requests, in 52% for chat. The alert waits 30
// minutes of windows above 0.3, so 29% per window never fires, while a
// real shift reads above it in every window; and a replica at 20 requests
// a minute (0.33 requests/s) is still judged.
const MinMixRequests = 20

// promptShiftThreshold is how much longer than the profile's the observed
// mean prompt must be before prompt tokens/s count as a load: under it the
// prompt rate measures the same requests as the in-flight load, only
// noisier (a few long prompts arriving in one window).
const promptShiftThreshold = 0.25

// promptsGrew reports whether the observed mean prompt is longer than the
// profile's by more than promptShiftThreshold; true when either is unknown,
// so the prompt rate still counts when the mix cannot be judged.
func promptsGrew(observed, profile float64) bool {
	if !nonNegative(observed) || !Known(profile) || profile <= 0 {
		return true
	}
	return observed > profile*(1+promptShiftThreshold)
}
