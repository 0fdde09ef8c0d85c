package rules

import (
	_ "embed"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// The chart's rule template (FormatHelm) is the generator's own output with
// Helm expressions where the chart's values apply, as kube-prometheus-stack's
// rule templates are its mixins' output with Helm expressions put in by a
// script. It is cut from the rules themselves, not written beside them:
//
//  1. The rules are generated with every parameter (helmParams) set to a
//     sentinel value whose printed forms occur nowhere else; wherever a
//     sentinel prints, the template gets a slot for that parameter in that
//     form (a PromQL number, a percentage, a duration, …).
//  2. A parameter value that changes more than printed values (helmAxes:
//     the page's for of 0, a probe window equal to the warning's) is
//     generated too; where its rules differ from the template's, the
//     template gets a conditional: around a rule, or around the part of a
//     string that differs. A for or keep_firing_for of 0 is left out, as
//     rulefmt leaves it out.
//  3. The template is rendered in Go (helmIR.render) for a second set of
//     sentinels, every axis and the defaults, and must equal what
//     Generate prints for them (PromQL compared as parsed expressions,
//     since a longer number can move the printer's line breaks); a value
//     the cutting missed would differ there.
//
// Values that change the rules' structure beyond that (a parameter's
// refusal) are not templated: the chart refuses them with directions to
// generate the rules with kneewatch.

// FormatHelm is the Helm template the kneewatch chart renders its
// PrometheusRule from (templates/_rules.tpl): the spec of FormatPrometheusRule
// with the chart's values where config.alerts, global.target_headroom and
// evaluationWindow apply.
const FormatHelm Format = "helm"

//go:embed helm_helpers.tpl
var helmHelpers string

// helmAxis is a parameter value that changes which rules or which text are
// generated, which the template follows with a conditional.
type helmAxis struct {
	name string
	// holds reports whether o has the value; helm is the same test in the
	// template, over $p.
	holds func(Options) bool
	helm  string
	// set gives o the value.
	set func(*Options)
}

// helmAxes are the values the template follows with conditionals.
func helmAxes(base Options) []helmAxis {
	success := dur(base.Probes.SuccessWindow)
	return []helmAxis{
		{
			name:  "a page for of 0 (no for, no \"for …\" in the description)",
			holds: func(o Options) bool { return o.HeadroomExhausted.For == 0 },
			helm:  "$p.headroom_exhausted_for.zero",
			set:   func(o *Options) { o.HeadroomExhausted.For = 0 },
		},
		{
			name:  "all probes failing over the warning's own window (one recording rule for both)",
			holds: func(o Options) bool { return o.Probes.FailingWindow == o.Probes.SuccessWindow },
			helm:  fmt.Sprintf("eq $p.probes_failing_all_failing_for.dur %q", success),
			set:   func(o *Options) { o.Probes.FailingWindow = o.Probes.SuccessWindow },
		},
	}
}

// cond is a condition of the template: in Go over options, in Helm over $p.
type cond struct {
	holds func(Options) bool
	helm  string
}

// slot is a place in the template where a parameter prints in a form.
type slot struct {
	param int
	form  string
}

// helmIR is the template before it is written as Helm: the rule groups as
// a YAML node tree whose strings carry slot and condition tokens.
type helmIR struct {
	params []helmParam
	base   Options // the options the template was cut from (sentinel set 0)
	doc    *yaml.Node
	slots  []slot
	conds  []cond
	// ruleConds holds the condition under which a rule (its sequence
	// item) is present.
	ruleConds map[*yaml.Node]int
}

// Tokens are plain ASCII words, so they change no YAML quoting.
var (
	tokenRE = regexp.MustCompile(`KW(SLOT|IFNOT|IF|ELSE|END|RULEIF)([0-9]+)Z`)
	// promTemplateRE is one action of Prometheus's alert templates.
	promTemplateRE = regexp.MustCompile(`\{\{.*?\}\}`)
)

func slotToken(i int) string { return "KWSLOT" + strconv.Itoa(i) + "Z" }

// sentinelOptions are o with every parameter at its sentinel of set i.
func sentinelOptions(o Options, params []helmParam, i int) Options {
	o.HeadroomExhausted.SustainWindows = slices.Clone(o.HeadroomExhausted.SustainWindows)
	for _, p := range params {
		if p.get != nil {
			setParam(p, &o, p.sentinels[i])
		}
	}
	return o
}

// buildHelmIR cuts the template from the rules generated for o (the
// template's defaults; its labels, disabled alerts and URLs are left to
// the chart's own template) and checks it.
func buildHelmIR(o Options) (*helmIR, error) {
	params := helmParams()
	for _, p := range params {
		if p.refused(o) {
			return nil, fmt.Errorf("rules: helm: the default %s is one the template refuses (%s)", p.path, p.refuse.reason)
		}
	}
	ir := &helmIR{params: params, base: sentinelOptions(o, params, 0), ruleConds: map[*yaml.Node]int{}}
	doc, err := ir.generate(ir.base)
	if err != nil {
		return nil, err
	}
	ir.doc = doc
	for _, a := range helmAxes(o) {
		if err := ir.addAxis(a); err != nil {
			return nil, fmt.Errorf("rules: helm: %s: %w", a.name, err)
		}
	}
	if err := ir.check(o); err != nil {
		return nil, err
	}
	return ir, nil
}

// generate generates the rules for o as a tokenized node tree.
func (ir *helmIR) generate(o Options) (*yaml.Node, error) {
	groups, err := Generate(o)
	if err != nil {
		return nil, fmt.Errorf("rules: helm: generating the rules to cut the template from: %w", err)
	}
	doc, err := groupsNode(groups)
	if err != nil {
		return nil, err
	}
	ir.walk(doc, func(n *yaml.Node, c place) { n.Value = ir.tokenize(n.Value, c) },
		func(g *yaml.Node) { g.HeadComment = ir.tokenize(g.HeadComment, inText) })
	return doc, nil
}

// walk calls f on every string of the rule groups that a parameter may
// print in, with the place it sits in, and comment on every group (whose
// comment is text).
func (ir *helmIR) walk(doc *yaml.Node, f func(*yaml.Node, place), comment func(*yaml.Node)) {
	for _, g := range doc.Content[1].Content {
		comment(g)
		rules := mapValue(g, "rules")
		if rules == nil {
			continue
		}
		for _, r := range rules.Content {
			for i := 0; i+1 < len(r.Content); i += 2 {
				k, v := r.Content[i].Value, r.Content[i+1]
				switch k {
				case "record":
					f(v, inName)
				case "expr":
					f(v, inPromQL)
				case "for", "keep_firing_for":
					f(v, inFor)
				case "annotations":
					for j := 1; j < len(v.Content); j += 2 {
						f(v.Content[j], inText)
					}
				}
			}
		}
	}
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// tokenize replaces each sentinel form (of set 0) that s holds in place c
// with its slot's token. A form matches only where it is a whole number or
// duration: not preceded by a digit (or a point, for numbers), not followed
// by a digit (or a letter, for durations).
func (ir *helmIR) tokenize(s string, c place) string {
	type form struct {
		text string
		slot slot
	}
	var fs []form
	for pi, p := range ir.params {
		if p.refuse != nil && !p.refuse.zero {
			continue // 0 in the base (the trend window), where it prints nothing
		}
		all := p.forms(p.value(ir.base))
		for _, name := range formsIn(p.kind, c) {
			fs = append(fs, form{all[name], slot{pi, name}})
		}
	}
	slices.SortStableFunc(fs, func(a, b form) int { return len(b.text) - len(a.text) })
	var out strings.Builder
	for i := 0; i < len(s); {
		matched := false
		for _, f := range fs {
			if !strings.HasPrefix(s[i:], f.text) || !ir.bounded(s, i, i+len(f.text), ir.params[f.slot.param].kind) {
				continue
			}
			out.WriteString(slotToken(ir.slotIndex(f.slot)))
			i += len(f.text)
			matched = true
			break
		}
		if !matched {
			out.WriteByte(s[i])
			i++
		}
	}
	return out.String()
}

func (ir *helmIR) bounded(s string, start, end int, k paramKind) bool {
	isDigit := func(b byte) bool { return b >= '0' && b <= '9' }
	if start > 0 && (isDigit(s[start-1]) || (k != durationParam && s[start-1] == '.')) {
		return false
	}
	if end < len(s) {
		b := s[end]
		if isDigit(b) || (k == durationParam && b >= 'a' && b <= 'z') || (k != durationParam && b == '.' && end+1 < len(s) && isDigit(s[end+1])) {
			return false
		}
	}
	return true
}

func (ir *helmIR) slotIndex(s slot) int {
	if i := slices.Index(ir.slots, s); i >= 0 {
		return i
	}
	ir.slots = append(ir.slots, s)
	return len(ir.slots) - 1
}

func (ir *helmIR) addCond(c cond) int {
	ir.conds = append(ir.conds, c)
	return len(ir.conds) - 1
}

// addAxis makes the template follow a: where the rules generated for the
// base options with a's value differ from the template resolved for them,
// the template gets a conditional.
func (ir *helmIR) addAxis(a helmAxis) error {
	flipped := ir.base
	a.set(&flipped)
	variant, err := ir.generate(flipped)
	if err != nil {
		return err
	}
	// The parameters whose slots take another value than the base's.
	changed := map[int]bool{}
	for pi, p := range ir.params {
		if p.value(flipped) != p.value(ir.base) {
			changed[pi] = true
		}
	}
	resolve := func(s string) string { return ir.resolve(s, flipped, changed) }
	yes := ir.addCond(cond{holds: a.holds, helm: a.helm})
	no := ir.addCond(cond{holds: func(o Options) bool { return !a.holds(o) }, helm: "not (" + a.helm + ")"})

	groups, vgroups := ir.doc.Content[1].Content, variant.Content[1].Content
	if len(groups) != len(vgroups) {
		return fmt.Errorf("it changes the number of rule groups (%d, not %d), which the template cannot follow", len(vgroups), len(groups))
	}
	for gi, g := range groups {
		vg := vgroups[gi]
		if name, vname := mapValue(g, "name").Value, mapValue(vg, "name").Value; name != vname {
			return fmt.Errorf("group %d is %s, not %s", gi, vname, name)
		}
		if err := ir.splice("group "+mapValue(g, "name").Value+" comment", &g.HeadComment, vg.HeadComment, yes, resolve); err != nil {
			return err
		}
		rules, vrules := mapValue(g, "rules"), mapValue(vg, "rules")
		// The rules the template keeps for the flipped options, by name.
		var kept []*yaml.Node
		for _, r := range rules.Content {
			if c, ok := ir.ruleConds[r]; !ok || ir.conds[c].holds(flipped) {
				kept = append(kept, r)
			}
		}
		// Match the variant's rules to the template's from the end, so a
		// rule the variant drops is the earlier of two alike.
		ki := len(kept) - 1
		for vi := len(vrules.Content) - 1; vi >= 0; vi-- {
			vr := vrules.Content[vi]
			for ki >= 0 && ruleName(kept[ki], resolve) != ruleName(vr, func(s string) string { return s }) {
				if _, ok := ir.ruleConds[kept[ki]]; ok {
					return fmt.Errorf("rule %s is conditional on two values", ruleName(kept[ki], resolve))
				}
				ir.ruleConds[kept[ki]] = no
				ki--
			}
			if ki < 0 {
				return fmt.Errorf("it adds rule %s, which the template cannot follow", ruleName(vr, func(s string) string { return s }))
			}
			if err := ir.spliceRule(kept[ki], vr, yes, resolve); err != nil {
				return err
			}
			ki--
		}
		for ; ki >= 0; ki-- {
			ir.ruleConds[kept[ki]] = no
		}
	}
	return nil
}

func ruleName(r *yaml.Node, resolve func(string) string) string {
	if n := mapValue(r, "record"); n != nil {
		return "record " + resolve(n.Value)
	}
	return "alert " + mapValue(r, "alert").Value
}

// spliceRule puts conditionals where rule r (of the template) differs from
// vr (of the variant) for the flipped options.
func (ir *helmIR) spliceRule(r, vr *yaml.Node, c int, resolve func(string) string) error {
	name := ruleName(vr, func(s string) string { return s })
	keys := func(m *yaml.Node, resolved bool) []string {
		var ks []string
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i].Value, m.Content[i+1]
			if resolved && (k == "for" || k == "keep_firing_for") && resolve(v.Value) == "0s" {
				continue // left out, as rulefmt leaves a zero duration out
			}
			ks = append(ks, k)
		}
		return ks
	}
	if k, vk := keys(r, true), keys(vr, false); !slices.Equal(k, vk) {
		return fmt.Errorf("rule %s has keys %v, not %v", name, vk, k)
	}
	for i := 0; i+1 < len(r.Content); i += 2 {
		k, v := r.Content[i].Value, r.Content[i+1]
		vv := mapValue(vr, k)
		if vv == nil {
			continue // a zero for
		}
		pairs := [][2]*yaml.Node{{v, vv}}
		if v.Kind == yaml.MappingNode {
			pairs = nil
			for j := 0; j+1 < len(v.Content); j += 2 {
				w := mapValue(vv, v.Content[j].Value)
				if w == nil || len(v.Content) != len(vv.Content) {
					return fmt.Errorf("rule %s: its %s differ in keys", name, k)
				}
				pairs = append(pairs, [2]*yaml.Node{v.Content[j+1], w})
			}
		}
		for _, p := range pairs {
			if err := ir.splice(name+" "+k, &p[0].Value, p[1].Value, c, resolve); err != nil {
				return err
			}
		}
	}
	return nil
}

// splice makes the template string *field print want where condition c
// holds: the part between what it resolves to (resolve) and want's common
// prefix and suffix goes into a conditional. Slots are never cut, and a
// string gets one conditional at most.
func (ir *helmIR) splice(where string, field *string, want string, c int, resolve func(string) string) error {
	have := resolve(*field)
	if have == want {
		return nil
	}
	// The template string as units, a slot or a character, each with what
	// it resolves to.
	type unit struct{ raw, text string }
	var units []unit
	for s := *field; len(s) > 0; {
		loc := tokenRE.FindStringSubmatchIndex(s)
		n := len(s)
		if loc != nil {
			n = loc[0]
		}
		for _, r := range s[:n] {
			units = append(units, unit{string(r), string(r)})
		}
		if loc == nil {
			break
		}
		if kind := s[loc[2]:loc[3]]; kind != "SLOT" {
			return fmt.Errorf("%s: two values change the same text, which the template cannot follow", where)
		}
		units = append(units, unit{s[loc[0]:loc[1]], resolve(s[loc[0]:loc[1]])})
		s = s[loc[1]:]
	}
	i, vp := 0, 0
	for i < len(units) && strings.HasPrefix(want[vp:], units[i].text) {
		vp += len(units[i].text)
		i++
	}
	j, vs := len(units), len(want)
	for j > i && vs-len(units[j-1].text) >= vp && strings.HasSuffix(want[:vs], units[j-1].text) {
		vs -= len(units[j-1].text)
		j--
	}
	var head, span, tail strings.Builder
	for k, u := range units {
		switch {
		case k < i:
			head.WriteString(u.raw)
		case k < j:
			span.WriteString(u.raw)
		default:
			tail.WriteString(u.raw)
		}
	}
	cs := strconv.Itoa(c)
	*field = head.String() + "KWIF" + cs + "Z" + want[vp:vs] + "KWELSE" + cs + "Z" + span.String() + "KWEND" + cs + "Z" + tail.String()
	return nil
}

// resolve is s with its conditionals decided for o; slots of changed
// parameters print their value in o, others stay tokens. With changed nil,
// a slot stays a token.
func (ir *helmIR) resolve(s string, o Options, changed map[int]bool) string {
	return ir.render(s, o, func(sl slot) bool { return changed[sl.param] })
}

// render is s for o: its conditionals decided, and the slots for which
// fill is true printed with their value (others stay tokens).
func (ir *helmIR) render(s string, o Options, fill func(slot) bool) string {
	var out strings.Builder
	for len(s) > 0 {
		loc := tokenRE.FindStringSubmatchIndex(s)
		if loc == nil {
			out.WriteString(s)
			break
		}
		out.WriteString(s[:loc[0]])
		kind := s[loc[2]:loc[3]]
		idx, _ := strconv.Atoi(s[loc[4]:loc[5]])
		s = s[loc[1]:]
		switch kind {
		case "SLOT":
			sl := ir.slots[idx]
			if fill(sl) {
				p := ir.params[sl.param]
				out.WriteString(p.forms(p.value(o))[sl.form])
			} else {
				out.WriteString(slotToken(idx))
			}
		case "IF":
			cs := strconv.Itoa(idx)
			elseAt := strings.Index(s, "KWELSE"+cs+"Z")
			endAt := strings.Index(s, "KWEND"+cs+"Z")
			if elseAt < 0 || endAt < elseAt {
				panic("rules: helm: unbalanced conditional " + cs)
			}
			branch := s[elseAt+len("KWELSE"+cs+"Z") : endAt]
			if ir.conds[idx].holds(o) {
				branch = s[:elseAt]
			}
			out.WriteString(ir.render(branch, o, fill))
			s = s[endAt+len("KWEND"+cs+"Z"):]
		default:
			panic("rules: helm: stray token " + kind)
		}
	}
	return out.String()
}

// check renders the template in Go for the defaults, the second sentinel
// set and each axis (alone and all together) on it, and compares each with
// the rules Generate prints for the same options.
func (ir *helmIR) check(defaults Options) error {
	second := sentinelOptions(defaults, ir.params, 1)
	cases := []struct {
		name string
		o    Options
	}{{"the defaults", defaults}, {"the second sentinels", second}}
	all := second
	for _, a := range helmAxes(defaults) {
		o := second
		a.set(&o)
		a.set(&all)
		cases = append(cases, struct {
			name string
			o    Options
		}{"the second sentinels with " + a.name, o})
	}
	cases = append(cases, struct {
		name string
		o    Options
	}{"the second sentinels with every axis", all})
	for _, c := range cases {
		if err := ir.matches(c.o); err != nil {
			return fmt.Errorf("rules: helm: the template cut for %s: %w", c.name, err)
		}
	}
	return nil
}

// matches compares the template rendered for o with Generate(o).
func (ir *helmIR) matches(o Options) error {
	want, err := Generate(o)
	if err != nil {
		return err
	}
	got, err := ir.renderGroups(o)
	if err != nil {
		return err
	}
	return diffGroups(want, got)
}

// renderGroups is the template rendered for o, as rule groups.
func (ir *helmIR) renderGroups(o Options) ([]Group, error) {
	fill := func(slot) bool { return true }
	var out []Group
	for _, g := range ir.doc.Content[1].Content {
		rg := rulefmt.RuleGroup{Name: mapValue(g, "name").Value}
		if iv := mapValue(g, "interval"); iv != nil {
			d, err := model.ParseDuration(iv.Value)
			if err != nil {
				return nil, fmt.Errorf("group %s: interval: %w", rg.Name, err)
			}
			rg.Interval = d
		}
		for _, r := range mapValue(g, "rules").Content {
			if c, ok := ir.ruleConds[r]; ok && !ir.conds[c].holds(o) {
				continue
			}
			var rendered yaml.Node
			rendered.Kind, rendered.Tag = yaml.MappingNode, "!!map"
			for i := 0; i+1 < len(r.Content); i += 2 {
				k, v := r.Content[i], r.Content[i+1]
				nv := *v
				if v.Kind == yaml.MappingNode {
					nv.Content = nil
					for j := 0; j+1 < len(v.Content); j += 2 {
						w := *v.Content[j+1]
						w.Value = ir.render(w.Value, o, fill)
						nv.Content = append(nv.Content, v.Content[j], &w)
					}
				} else {
					nv.Value = ir.render(v.Value, o, fill)
					if (k.Value == "for" || k.Value == "keep_firing_for") && nv.Value == "0s" {
						continue
					}
				}
				rendered.Content = append(rendered.Content, k, &nv)
			}
			var rule rulefmt.Rule
			if err := rendered.Decode(&rule); err != nil {
				return nil, fmt.Errorf("group %s: %w", rg.Name, err)
			}
			rg.Rules = append(rg.Rules, rule)
		}
		out = append(out, Group{RuleGroup: rg, Comment: ir.render(g.HeadComment, o, fill)})
	}
	return out, nil
}

// diffGroups reports the first difference between two sets of rule groups,
// comparing expressions as parsed PromQL.
func diffGroups(want, got []Group) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d groups, want %d", len(got), len(want))
	}
	pp := parser.NewParser(parser.Options{})
	for i := range want {
		w, g := want[i], got[i]
		if w.Name != g.Name || w.Interval != g.Interval || w.Comment != g.Comment || len(w.Rules) != len(g.Rules) {
			return fmt.Errorf("group %d: %s (interval %s, %d rules, comment %q), want %s (interval %s, %d rules, comment %q)",
				i, g.Name, g.Interval, len(g.Rules), g.Comment, w.Name, w.Interval, len(w.Rules), w.Comment)
		}
		for j := range w.Rules {
			wr, gr := w.Rules[j], g.Rules[j]
			name := wr.Record + wr.Alert
			we, err := pp.ParseExpr(wr.Expr)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			ge, err := pp.ParseExpr(gr.Expr)
			if err != nil {
				return fmt.Errorf("%s: the template's expr %q: %w", name, gr.Expr, err)
			}
			if we.String() != ge.String() {
				return fmt.Errorf("%s: expr %s, want %s", name, ge, we)
			}
			gr.Expr = wr.Expr
			if !reflect.DeepEqual(normalRule(wr), normalRule(gr)) {
				return fmt.Errorf("%s: %+v, want %+v", name, gr, wr)
			}
		}
	}
	return nil
}

// normalRule drops what the YAML round trip does not keep (empty maps).
func normalRule(r rulefmt.Rule) rulefmt.Rule {
	if len(r.Labels) == 0 {
		r.Labels = nil
	}
	if len(r.Annotations) == 0 {
		r.Annotations = nil
	}
	return r
}

// helmTemplate is the chart's template file for the template's defaults o.
func helmTemplate(o Options) ([]byte, error) {
	ir, err := buildHelmIR(o)
	if err != nil {
		return nil, err
	}
	return ir.helm(o)
}

// helm writes the template as Helm: the defines the chart includes.
func (ir *helmIR) helm(defaults Options) ([]byte, error) {
	for r, c := range ir.ruleConds {
		r.HeadComment = "KWRULEIF" + strconv.Itoa(c) + "Z"
	}
	text, err := encode(ir.doc)
	if err != nil {
		return nil, err
	}
	// Prometheus's own templates in the annotations are text to Helm: each
	// is printed by a raw string, as kube-prometheus-stack's rules print
	// them.
	spec := promTemplateRE.ReplaceAllStringFunc(string(text), func(action string) string {
		if strings.Contains(action, "`") {
			return strings.NewReplacer("{{", `{{"{{"}}`, "}}", `{{"}}"}}`).Replace(action)
		}
		return "{{`" + action + "`}}"
	})
	if strings.Count(spec, "{{") != strings.Count(spec, "}}") {
		return nil, fmt.Errorf("rules: helm: unbalanced {{ }} in the rules")
	}
	// A conditional with an empty branch reads better as one test.
	for c := range ir.conds {
		cs := strconv.Itoa(c)
		spec = strings.ReplaceAll(spec, "KWIF"+cs+"ZKWELSE"+cs+"Z", "KWIFNOT"+cs+"Z")
		spec = strings.ReplaceAll(spec, "KWELSE"+cs+"ZKWEND"+cs+"Z", "KWEND"+cs+"Z")
	}

	var b strings.Builder
	lines := strings.Split(strings.TrimSuffix(spec, "\n"), "\n")
	forLine := regexp.MustCompile(`^\s*(for|keep_firing_for): KWSLOT([0-9]+)Z$`)
	ruleIf := regexp.MustCompile(`^(\s*)# KWRULEIF([0-9]+)Z$`)
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := ruleIf.FindStringSubmatch(l); m != nil {
			c, _ := strconv.Atoi(m[2])
			fmt.Fprintf(&b, "{{- if %s }}\n", ir.conds[c].helm)
			item := len(m[1])
			i++
			b.WriteString(lines[i] + "\n")
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > item) {
				i++
				b.WriteString(lines[i] + "\n")
			}
			b.WriteString("{{- end }}\n")
			continue
		}
		if m := forLine.FindStringSubmatch(l); m != nil {
			s, _ := strconv.Atoi(m[2])
			fmt.Fprintf(&b, "{{- if not $p.%s.zero }}\n%s\n{{- end }}\n", ir.params[ir.slots[s].param].id, l)
			continue
		}
		b.WriteString(l + "\n")
	}
	var bad []string
	body := tokenRE.ReplaceAllStringFunc(b.String(), func(tok string) string {
		m := tokenRE.FindStringSubmatch(tok)
		i, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "SLOT":
			sl := ir.slots[i]
			return fmt.Sprintf("{{ $p.%s.%s }}", ir.params[sl.param].id, sl.form)
		case "IF":
			return fmt.Sprintf("{{ if %s }}", ir.conds[i].helm)
		case "IFNOT":
			return fmt.Sprintf("{{ if not (%s) }}", ir.conds[i].helm)
		case "ELSE":
			return "{{ else }}"
		case "END":
			return "{{ end }}"
		}
		bad = append(bad, tok)
		return tok
	})
	if len(bad) > 0 {
		return nil, fmt.Errorf("rules: helm: tokens left in the template: %v", bad)
	}

	var out strings.Builder
	out.WriteString(helmHeader)
	out.WriteString(helmHelpers)
	out.WriteString("\n{{- /* kneewatch.rules.params: the parameters of the rules, from the chart's values (root context), as JSON. */ -}}\n")
	out.WriteString("{{- define \"kneewatch.rules.params\" -}}\n{{- $p := dict }}\n")
	for _, p := range ir.params {
		v := p.value(defaults)
		var arg string
		switch {
		case p.of != "":
			arg = fmt.Sprintf(`(dict "value" (subf 1 $p.%s.value))`, p.of)
		case p.kind == durationParam:
			arg = fmt.Sprintf(`(dict "values" .Values "path" %q "default" %q)`, p.path, p.forms(v)["dur"])
		default:
			arg = fmt.Sprintf(`(dict "values" .Values "path" %q "default" %s)`, p.path, strconv.FormatFloat(v, 'g', -1, 64))
		}
		kind := map[paramKind]string{ratioParam: "ratio", countParam: "count", durationParam: "duration"}[p.kind]
		fmt.Fprintf(&out, "{{- $_ := set $p %q (include \"kneewatch.rules.%s\" %s | fromJson) }}\n", p.id, kind, arg)
	}
	out.WriteString("{{- toJson $p }}\n{{- end }}\n")

	out.WriteString("\n{{- /* kneewatch.rules.refused: the values (root context) the template does not follow, one message a line; empty when it follows them all. */ -}}\n")
	out.WriteString("{{- define \"kneewatch.rules.refused\" -}}\n{{- $p := include \"kneewatch.rules.params\" . | fromJson }}\n")
	for _, p := range ir.params {
		if p.refuse == nil {
			continue
		}
		test, show := "$p."+p.id+".zero", map[paramKind]string{ratioParam: "text", countParam: "int", durationParam: "dur"}[p.kind]
		if !p.refuse.zero {
			test = "not " + test
		}
		fmt.Fprintf(&out, "{{- if %s }}\n%s: {{ $p.%s.%s }} %s\n{{- end }}\n", test, p.path, p.id, show, p.refuse.reason)
	}
	out.WriteString("{{- end }}\n")

	fmt.Fprintf(&out, "\n{{- /* kneewatch.rules.alertNames: the alerts the rules have, space-separated. */ -}}\n{{- define \"kneewatch.rules.alertNames\" -}}\n%s\n{{- end }}\n", strings.Join(Alerts(), " "))
	fmt.Fprintf(&out, "\n{{- /* kneewatch.rules.reservedLabels: labels config.alerts.labels may not set, space-separated. */ -}}\n{{- define \"kneewatch.rules.reservedLabels\" -}}\n%s\n{{- end }}\n", strings.Join(reservedAlertLabels, " "))

	out.WriteString("\n{{- /* kneewatch.rules.spec: the PrometheusRule's spec for the chart's values (root context). */ -}}\n")
	out.WriteString("{{- define \"kneewatch.rules.spec\" -}}\n{{- $p := include \"kneewatch.rules.params\" . | fromJson }}\n")
	out.WriteString(body)
	out.WriteString("{{- end }}\n")
	return []byte(out.String()), nil
}

const helmHeader = `{{- /*
Generated by ` + "`kneewatch rules --format helm`" + `; do not edit. The chart's tests fail
when it is stale (go test ./deploy/helm/kneewatch/tests -update rewrites it).

The PrometheusRule's spec is kneewatch's generated rules with the chart's
values where config.alerts, config.global.target_headroom and
evaluationWindow apply: each value is printed as the generator prints it,
and a for or keep_firing_for of 0 is left out as the generator leaves it
out. Values that change the rules' structure are listed by
kneewatch.rules.refused; templates/prometheusrule.yaml refuses them.
*/ -}}
`
