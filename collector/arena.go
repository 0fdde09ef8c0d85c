package collector

// arena hands out zeroed values of T from chunks that a pooled scanner
// keeps from one scrape to the next, so the client_model messages, label
// pairs and buckets of a scrape are not allocated anew each time (at a
// thousand replicas, allocating them was half of what the scrape path
// allocated). Nothing may refer to what an arena handed out after reset.
type arena[T any] struct {
	chunks [][]T
	next   int // the chunk being handed out
	used   int // elements of chunks[next] handed out
}

// take returns n contiguous zeroed elements, with no room to append
// past them, from a chunk of at least size elements.
func (a *arena[T]) take(n, size int) []T {
	for {
		if a.next == len(a.chunks) {
			a.chunks = append(a.chunks, make([]T, max(n, size)))
		}
		if c := a.chunks[a.next]; a.used+n <= len(c) {
			out := c[a.used : a.used+n : a.used+n]
			a.used += n
			return out
		}
		a.next++
		a.used = 0
	}
}

// one returns a pointer to one zeroed element.
func (a *arena[T]) one(size int) *T { return &a.take(1, size)[0] }

// reset zeroes what was handed out and keeps at most keep chunks for the
// next scrape: one scrape of a huge exposition must not leave its memory
// to every scrape after it.
func (a *arena[T]) reset(keep int) {
	for i := 0; i < len(a.chunks) && i <= a.next; i++ {
		clear(a.chunks[i])
	}
	if len(a.chunks) > keep {
		clear(a.chunks[keep:])
		a.chunks = a.chunks[:keep]
	}
	a.next, a.used = 0, 0
}
