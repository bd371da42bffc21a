package render

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// ScheduleError says why spec.backup.schedule cannot be run. Its message names the field and the schedule, so the
// controller can put it in a condition as is (reason v1alpha1.ReasonInvalidSchedule); find it with errors.As.
type ScheduleError struct {
	Schedule string
	Reason   string
}

func (e *ScheduleError) Error() string {
	return fmt.Sprintf("backup.schedule %q: %s", e.Schedule, e.Reason)
}

// Unwrap makes a ScheduleError also match ErrInvalid.
func (e *ScheduleError) Unwrap() error { return ErrInvalid }

// macros are the schedules Kubernetes documents for CronJobs besides the five fields. They run at fixed times in
// every member; write "H H * * *" instead of @daily to spread a fleet's backups over the day.
var macros = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true, "@daily": true, "@midnight": true,
	"@hourly": true,
}

// hashField is a field in which H may stand, with its range.
type hashField struct {
	name     string
	min, max int
}

var hashFields = []hashField{{"minute", 0, 59}, {"hour", 0, 23}}

// BackupSchedule is the CronJob schedule of member's backups: spec.backup.schedule with every H replaced by a
// value hashed from the MySQLCluster's namespace and name and the member's name, so that a fleet's backups do not
// all start at once, yet each member's time is the same on every pass. It is empty when spec.backup is not set.
//
// In the minute and hour fields, H is any value of the field, H(a-b) a value in a..b, and H/n (or H(a-b)/n)
// every n from a hashed offset below n, e.g. H/15 may become 7-59/15. H elsewhere, @every, @reboot and TZ= or
// CRON_TZ= prefixes are refused (a CronJob has spec.timeZone for the latter). The result is checked with the
// cron parser that Kubernetes uses.
func BackupSchedule(c *v1alpha1.MySQLCluster, member string) (string, error) {
	if c.Spec.Backup == nil {
		return "", nil
	}
	return expandSchedule(c.Spec.Backup.Schedule, c.Namespace+"/"+c.Name+"/"+member)
}

func expandSchedule(schedule, seed string) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", &ScheduleError{Schedule: schedule, Reason: fmt.Sprintf(format, args...)}
	}
	s := strings.TrimSpace(schedule)
	switch {
	case s == "":
		return fail("is empty")
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return fail("time zone prefixes are not supported: CronJobs run in their cluster's time zone")
	case strings.HasPrefix(s, "@"):
		word, _, _ := strings.Cut(s, " ")
		switch {
		case macros[s]:
			return s, nil
		case word == "@every" || word == "@reboot":
			return fail("%s is not supported by Kubernetes CronJobs; use five fields or @hourly, @daily, @weekly, @monthly or @yearly", word)
		default:
			return fail("unknown macro; use five fields or @hourly, @daily, @weekly, @monthly or @yearly")
		}
	}

	fields := strings.Fields(s)
	if len(fields) != 5 {
		return fail("needs five fields (minute hour day-of-month month day-of-week) or a macro, got %d", len(fields))
	}
	for i, f := range fields {
		if i >= len(hashFields) {
			if strings.Contains(f, "H") {
				return fail("H is only supported in the minute and hour fields")
			}
			continue
		}
		items := strings.Split(f, ",")
		for j, item := range items {
			if !strings.HasPrefix(item, "H") {
				continue
			}
			v, reason := expandH(item, hashFields[i], seed)
			if reason != "" {
				return fail("%s %s: %s", hashFields[i].name, item, reason)
			}
			items[j] = v
		}
		fields[i] = strings.Join(items, ",")
	}
	expanded := strings.Join(fields, " ")
	if _, err := cron.ParseStandard(expanded); err != nil {
		if expanded != s {
			return fail("expanded to %q: %v", expanded, err)
		}
		return fail("%v", err)
	}
	return expanded, nil
}

// expandH replaces one H item of field f: H, H(a-b), H/n or H(a-b)/n. The hash is salted with the field's name
// so that minute and hour do not move together.
func expandH(item string, f hashField, seed string) (string, string) {
	lo, hi := f.min, f.max
	rest := item[1:]
	if strings.HasPrefix(rest, "(") {
		end := strings.Index(rest, ")")
		if end < 0 {
			return "", "missing ')'"
		}
		a, b, ok := strings.Cut(rest[1:end], "-")
		if !ok {
			return "", "H(a-b) needs a range"
		}
		var err error
		if lo, err = strconv.Atoi(a); err != nil {
			return "", fmt.Sprintf("%q is not a number", a)
		}
		if hi, err = strconv.Atoi(b); err != nil {
			return "", fmt.Sprintf("%q is not a number", b)
		}
		if lo < f.min || hi > f.max {
			return "", fmt.Sprintf("range %d-%d is outside %d-%d", lo, hi, f.min, f.max)
		}
		if lo > hi {
			return "", fmt.Sprintf("range %d-%d is empty", lo, hi)
		}
		rest = rest[end+1:]
	}
	h := hash(seed + "/" + f.name)
	span := hi - lo + 1
	if rest == "" {
		return strconv.Itoa(lo + int(h%uint64(span))), ""
	}
	stepText, ok := strings.CutPrefix(rest, "/")
	if !ok {
		return "", "H must be followed by nothing, (a-b) or /n"
	}
	step, err := strconv.Atoi(stepText)
	if err != nil || step < 1 || step > span {
		return "", fmt.Sprintf("step %q must be a number from 1 to %d", stepText, span)
	}
	return fmt.Sprintf("%d-%d/%d", lo+int(h%uint64(step)), hi, step), ""
}

// hash is FNV-1a: fast, stable across Go releases and platforms, and not meant to be secret.
func hash(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}
