package shard

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

func memberNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%02d", []string{"aws", "azure", "gcp"}[i%3], i))
	}
	return out
}

// replicaName looks like a Pod of a Deployment with a random suffix, as DefaultShardIdentity makes them.
func replicaName(rng *rand.Rand) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = letters[rng.Intn(len(letters))]
	}
	return "mysqlfleet-manager-6d8f9c7b5-x2k4q-" + string(b)
}

func TestAssignGivesEveryMemberOneOwnerWithinTheBound(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 2, 6, 30, 31, 100} {
		for _, p := range []int{1, 2, 3, 4, 7} {
			var peers []string
			for range p {
				peers = append(peers, replicaName(rng))
			}
			members := memberNames(n)
			got := Assign(members, peers)
			g.Expect(got).To(HaveLen(n))
			load := map[string]int{}
			for _, m := range members {
				g.Expect(peers).To(ContainElement(got[m]))
				load[got[m]]++
			}
			for peer, l := range load {
				g.Expect(l).To(BeNumerically("<=", (n+p-1)/p), "%d members on %d peers: %s has %d", n, p, peer, l)
			}
			// The same sets in another order, with repeats, give the same owners: every replica computes them
			// from its own view.
			shuffled := slices.Clone(members)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			g.Expect(Assign(append(shuffled, shuffled...), append(slices.Clone(peers), peers[0]))).To(Equal(got))
		}
	}
	g.Expect(Assign(memberNames(3), nil)).To(BeEmpty(), "no live replica, no owner")
}

// TestAssignMoves measures, over many draws of replica names, how many of 30 members move when a fourth replica
// joins three and when one of three leaves, against the least any assignment must move (a quarter of the
// members; the departed replica's third), and the largest share against plain rendezvous hashing's.
func TestAssignMoves(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewSource(7))
	members := memberNames(30)
	const draws = 400
	var joinMoves, joinElsewhere, leaveMoves, leaveElsewhere, plainMax, plainOver int
	for range draws {
		peers := []string{replicaName(rng), replicaName(rng), replicaName(rng)}
		before := Assign(members, peers)

		newcomer := replicaName(rng)
		joined := Assign(members, append(slices.Clone(peers), newcomer))
		for _, m := range members {
			if joined[m] != before[m] {
				joinMoves++
				if joined[m] != newcomer {
					joinElsewhere++ // sent back to its first choice by the bound
				}
			}
		}
		left := Assign(members, peers[1:])
		for _, m := range members {
			if left[m] != before[m] {
				leaveMoves++
				if before[m] != peers[0] {
					leaveElsewhere++
				}
			}
		}

		// Plain rendezvous: the highest score wins, whatever the load.
		load := map[string]int{}
		for _, m := range members {
			best := peers[0]
			for _, p := range peers[1:] {
				if score(m, p) > score(m, best) {
					best = p
				}
			}
			load[best]++
		}
		most := slices.Max(slices.Collect(func(yield func(int) bool) {
			for _, l := range load {
				if !yield(l) {
					return
				}
			}
		}))
		plainMax = max(plainMax, most)
		if most >= 14 {
			plainOver++
		}
	}
	join, leave := float64(joinMoves)/draws, float64(leaveMoves)/draws
	t.Logf("30 members, 3 → 4 replicas: %.1f move (at least 7.5), %.2f of them between the old replicas", join, float64(joinElsewhere)/draws)
	t.Logf("30 members, 3 → 2 replicas: %.1f move (at least 10), %.2f of them between the remaining replicas", leave, float64(leaveElsewhere)/draws)
	t.Logf("plain rendezvous hashing: a replica owned 14 or more of 30 in %d of %d draws (at most %d); bounded: 10", plainOver, draws, plainMax)
	g.Expect(join).To(BeNumerically("<=", 1.3*7.5))
	g.Expect(leave).To(BeNumerically("<=", 1.15*10))
}
