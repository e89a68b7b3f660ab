// Package spelling finds the word a misspelt one was meant to be, for
// messages that say "did you mean".
package spelling

// Distance is the edit distance between two strings (insertions,
// deletions and substitutions of bytes).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Nearest is the known word nearest to word, and its distance (-1 when
// there is none); ties go to the first.
func Nearest(word string, known []string) (string, int) {
	best, dist := "", -1
	for _, k := range known {
		if d := Distance(word, k); dist < 0 || d < dist {
			best, dist = k, d
		}
	}
	return best, dist
}
