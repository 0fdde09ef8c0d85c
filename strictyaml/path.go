package strictyaml

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pathAt names the field at a line of a decoded document, so that decoding
// errors, which yaml reports by line only, also name the field. When several
// fields share the line (a flow mapping such as {p50: 1, p99: 2}) it names
// their common parent; it returns "" when no field starts on that line.
func pathAt(root *yaml.Node, line int) string {
	var found [][]string
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := append(path[:len(path):len(path)], n.Content[i].Value)
				if n.Content[i].Line == line {
					found = append(found, p)
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]")
				if c.Kind == yaml.ScalarNode && c.Line == line {
					found = append(found, p)
				}
				walk(c, p)
			}
		}
	}
	walk(root, nil)
	if len(found) == 0 {
		return ""
	}
	common := found[0]
	for _, p := range found[1:] {
		n := 0
		for n < len(common) && n < len(p) && common[n] == p[n] {
			n++
		}
		common = common[:n]
	}
	return joinPath(common)
}

// joinPath writes segments as a field path: "points", "[2]", "p99" → "points[2].p99".
func joinPath(segments []string) string {
	var b strings.Builder
	for i, s := range segments {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// lineOf finds the line of a field path such as "points[2].ttftSeconds.p99"
// in a decoded document. When the field itself is absent (a required field
// left out) it returns the line of its nearest present parent, and 0 when
// not even the first step is present.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, step := range strings.Split(path, ".") {
		key, indexes := splitIndexes(step)
		next, keyLine := mappingValue(n, key)
		if next == nil {
			return line
		}
		n, line = next, keyLine
		for _, i := range indexes {
			if n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
		}
	}
	return line
}

// splitIndexes splits "points[2]" into "points" and [2].
func splitIndexes(step string) (string, []int) {
	key, rest, found := strings.Cut(step, "[")
	if !found {
		return step, nil
	}
	var idx []int
	for _, part := range strings.Split(strings.TrimSuffix(rest, "]"), "][") {
		i, err := strconv.Atoi(part)
		if err != nil {
			return key, idx
		}
		idx = append(idx, i)
	}
	return key, idx
}

// mappingValue returns the value under key in a mapping node and the line of
// the key.
func mappingValue(n *yaml.Node, key string) (*yaml.Node, int) {
	if n.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}
