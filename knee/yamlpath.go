package knee

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
