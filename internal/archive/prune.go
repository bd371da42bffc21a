package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// Prune deletes the segments that no retained backup can use, so that the archive is bounded by the backups'
// retention rather than growing for ever. A restore starts from a backup and replays the segments after its GTID
// position; a segment whose every transaction each retained backup already holds (its End is contained in every
// position of keep) is never replayed again. keep is the GTID positions of the retained backups, as
// backup.List returns them after backup.Prune.
//
// It deletes nothing when keep is empty (the archive may then be all there is of the data) or when a position
// cannot be parsed (it would not know what that backup holds), and it always keeps the newest segment: the
// archiver resumes where the newest segment ends, and with none it would start over from its From position.
// Each segment goes manifest before object, as backups do, so that a prune cut short never lists a segment
// without its data; a segment object left without its manifest is not in the archive (List reads manifests),
// and Prune leaves it, as it leaves objects it does not know. It returns the segments deleted.
func Prune(ctx context.Context, s backup.Store, keep []string) ([]Segment, error) {
	segs, err := List(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("not pruning the binary-log archive: %w", err)
	}
	if len(keep) == 0 || len(segs) < 2 {
		return nil, nil // a store with no archive (MySQL's, or one never archived) has nothing to prune
	}
	held := make([]gomysql.GTIDSet, 0, len(keep))
	for _, p := range keep {
		set, err := gomysql.ParseMariadbGTIDSet(p)
		if err != nil {
			return nil, fmt.Errorf("not pruning the binary-log archive: backup position %q: %w", p, err)
		}
		held = append(held, set)
	}
	var deleted []Segment
	var errs []error
	for i, seg := range segs {
		if i == len(segs)-1 {
			break // the archiver resumes from it
		}
		end, err := gomysql.ParseMariadbGTIDSet(seg.End)
		if err != nil {
			errs = append(errs, fmt.Errorf("segment %s ends at %q: %w", seg.Name, seg.End, err))
			continue
		}
		if !heldByAll(held, end) {
			continue
		}
		if err := s.Delete(ctx, Prefix+seg.Name+manifestSuffix); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.Delete(ctx, seg.Object); err != nil {
			errs = append(errs, err)
		}
		deleted = append(deleted, seg)
	}
	return deleted, errors.Join(errs...)
}

// heldByAll tells whether every position holds end (every transaction up to it).
func heldByAll(held []gomysql.GTIDSet, end gomysql.GTIDSet) bool {
	for _, h := range held {
		if !h.Contain(end) {
			return false
		}
	}
	return true
}

// Positions is the GTID positions of backups, for Prune.
func Positions(backups []backup.Manifest) []string {
	out := make([]string, 0, len(backups))
	for _, m := range backups {
		out = append(out, strings.TrimSpace(m.GTIDPosition))
	}
	return out
}
