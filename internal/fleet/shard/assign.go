package shard

import (
	"hash/fnv"
	"slices"
	"sort"
)

// Assign gives every member an owner among the peers: rendezvous (highest random weight) hashing with bounded
// loads. Each member ranks the peers by a hash of (member, peer); the members, taken in an order fixed by a hash
// of their names, each go to the highest-ranked peer that owns fewer than ⌈members/peers⌉ so far. It is a pure
// function of the two sets, so every replica computes the same owners from the same view.
//
// Plain rendezvous hashing moves only what it must when a peer comes or goes (the members the newcomer ranks
// first; the departed peer's members), but its shares vary: with a few peers, one of them often owns far more
// than its share, and a replica's memory is its members' caches. The bound makes the shares even (⌈n/p⌉ at most)
// at the price of a few more moves: a member that the bound had sent to its second choice goes back to its first
// when room appears. TestAssignMoves measures both over many draws of replica names and logs them (go test -v
// -run TestAssignMoves): the largest share under plain rendezvous hashing, and the members that move when a
// fourth replica joins three or one of three leaves, against the least any assignment must move; it fails when
// the bound moves more than 1.3 times that least for a join, or 1.15 times for a departure.
func Assign(members, peers []string) map[string]string {
	out := make(map[string]string, len(members))
	if len(peers) == 0 {
		return out
	}
	peers = slices.Clone(peers)
	slices.Sort(peers)
	peers = slices.Compact(peers)
	order := slices.Clone(members)
	slices.Sort(order)
	order = slices.Compact(order)
	sort.SliceStable(order, func(i, j int) bool { return score(order[i], "") < score(order[j], "") })

	limit := (len(order) + len(peers) - 1) / len(peers)
	load := make(map[string]int, len(peers))
	ranked := make([]string, len(peers))
	for _, m := range order {
		copy(ranked, peers)
		sort.SliceStable(ranked, func(i, j int) bool { return score(m, ranked[i]) > score(m, ranked[j]) })
		for _, p := range ranked {
			if load[p] < limit {
				out[m] = p
				load[p]++
				break
			}
		}
	}
	return out
}

// score is a member's weight for a peer: FNV-1a of both names, mixed by splitmix64's finalizer so that every bit
// of the score depends on every byte of the names.
func score(member, peer string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(peer))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
