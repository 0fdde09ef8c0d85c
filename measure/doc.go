// Package measure is kneewatch's one way of measuring a knee, shared by
// `kneewatch sweep` (HTTP against a real endpoint) and the simulator's
// FindKnee (virtual time), so the two cannot drift apart:
//
//   - Search decides which concurrency to measure next and where the knee is;
//   - Summarize turns a level's requests into a profile point and an SLO
//     verdict (how goodput is counted, whether errors count);
//   - Tally is the sequential rule that lets a level stop before its window
//     fills when its verdict is already clear, with the confidence stated;
//   - Runaway judges whether an open-loop trial's queue settled.
//
// Running a level is the caller's job: the simulator steps its engine, the
// sweep drives an OpenAI-compatible endpoint.
package measure
