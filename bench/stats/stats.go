// Package stats holds the small statistics the benchmarks summarise their runs with.
package stats

import "slices"

// Median of vs (the mean of the middle two for an even count); 0 for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
