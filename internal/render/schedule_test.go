package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/robfig/cron/v3"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

func scheduleFor(schedule string) *v1alpha1.MySQLCluster {
	return cluster(withBackup(schedule, pvcTarget()))
}

func TestBackupScheduleValid(t *testing.T) {
	tests := []struct {
		schedule string
		// check is applied to the expanded fields; nil means the schedule is returned as written (normalised).
		check func(g Gomega, fields []string)
		want  string
	}{
		{schedule: "30 2 * * *", want: "30 2 * * *"},
		{schedule: "  30   2 * *   1-5 ", want: "30 2 * * 1-5"},
		{schedule: "*/15 * * * *", want: "*/15 * * * *"},
		{schedule: "0 0 1 JAN,JUL SUN", want: "0 0 1 JAN,JUL SUN"},
		{schedule: "@daily", want: "@daily"},
		{schedule: "@hourly", want: "@hourly"},
		{schedule: "@weekly", want: "@weekly"},
		{schedule: "@monthly", want: "@monthly"},
		{schedule: "@yearly", want: "@yearly"},
		{schedule: "@annually", want: "@annually"},
		{schedule: "@midnight", want: "@midnight"},
		{schedule: "H 2 * * *", check: func(g Gomega, f []string) {
			g.Expect(atoi(f[0])).To(BeNumerically("<=", 59))
			g.Expect(f[1:]).To(Equal([]string{"2", "*", "*", "*"}))
		}},
		{schedule: "H H * * *", check: func(g Gomega, f []string) {
			g.Expect(atoi(f[0])).To(BeNumerically("<=", 59))
			g.Expect(atoi(f[1])).To(BeNumerically("<=", 23))
		}},
		{schedule: "H(10-20) H(1-4) * * 0", check: func(g Gomega, f []string) {
			g.Expect(atoi(f[0])).To(And(BeNumerically(">=", 10), BeNumerically("<=", 20)))
			g.Expect(atoi(f[1])).To(And(BeNumerically(">=", 1), BeNumerically("<=", 4)))
		}},
		{schedule: "H(5-5) 3 * * *", want: "5 3 * * *"},
		{schedule: "H/15 * * * *", check: func(g Gomega, f []string) {
			g.Expect(f[0]).To(MatchRegexp(`^([0-9]|1[0-4])-59/15$`))
		}},
		{schedule: "0 H/6 * * *", check: func(g Gomega, f []string) {
			g.Expect(f[1]).To(MatchRegexp(`^[0-5]-23/6$`))
		}},
		{schedule: "H(0-29)/10 * * * *", check: func(g Gomega, f []string) {
			g.Expect(f[0]).To(MatchRegexp(`^[0-9]-29/10$`))
		}},
		{schedule: "H/1 * * * *", want: "0-59/1 * * * *"},
		{schedule: "H,30 1 * * *", check: func(g Gomega, f []string) {
			g.Expect(f[0]).To(MatchRegexp(`^[0-9]+,30$`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.schedule, func(t *testing.T) {
			g := NewWithT(t)
			got, err := BackupSchedule(scheduleFor(tt.schedule), "aws-eu-west-1")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).NotTo(ContainSubstring("H"))
			_, err = cron.ParseStandard(got)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.check == nil {
				g.Expect(got).To(Equal(tt.want))
				return
			}
			tt.check(g, strings.Fields(got))
		})
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func TestBackupScheduleInvalid(t *testing.T) {
	tests := []struct {
		schedule string
		reason   string
	}{
		{"", "is empty"},
		{"   ", "is empty"},
		{"* * * *", "five fields"},
		{"0 * * * * *", "five fields"},
		{"H 2 H * *", "H is only supported in the minute and hour fields"},
		{"0 2 * H *", "only supported in the minute and hour"},
		{"0 2 * * H", "only supported in the minute and hour"},
		{"H(30-10) * * * *", "range 30-10 is empty"},
		{"H(0-60) * * * *", "outside 0-59"},
		{"0 H(0-24) * * *", "outside 0-23"},
		{"H(a-b) * * * *", "not a number"},
		{"H(10) * * * *", "needs a range"},
		{"H(10-20 * * * *", "missing ')'"},
		{"H/0 * * * *", "step"},
		{"H/61 * * * *", "step"},
		{"0 H/25 * * *", "step"},
		{"Hx * * * *", "H must be followed by"},
		{"@every 1h", "@every is not supported"},
		{"@reboot", "@reboot is not supported"},
		{"@fortnightly", "unknown macro"},
		{"TZ=UTC 0 2 * * *", "time zone"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", "time zone"},
		{"61 * * * *", "above maximum"},
		{"0 24 * * *", "above maximum"},
		{"0 0 32 * *", "above maximum"},
		{"0 0 * 13 *", "above maximum"},
		{"0 0 * * 8", "above maximum"},
		{"x * * * *", "failed to parse"},
		{"h 2 * * *", "failed to parse"},
	}
	for _, tt := range tests {
		t.Run(tt.schedule, func(t *testing.T) {
			g := NewWithT(t)
			got, err := BackupSchedule(scheduleFor(tt.schedule), "aws-eu-west-1")
			g.Expect(got).To(BeEmpty())
			g.Expect(err).To(MatchError(ContainSubstring(tt.reason)))
			g.Expect(err).To(MatchError(HavePrefix(fmt.Sprintf("backup.schedule %q: ", tt.schedule))))
			var se *ScheduleError
			g.Expect(errors.As(err, &se)).To(BeTrue())
			g.Expect(errors.Is(err, ErrInvalid)).To(BeTrue())
		})
	}
}

func TestBackupScheduleWithoutBackup(t *testing.T) {
	g := NewWithT(t)
	got, err := BackupSchedule(cluster(), "aws-eu-west-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeEmpty())
}

func TestBackupScheduleIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	c := scheduleFor("H H(1-5) * * *")
	first, err := BackupSchedule(c, "gcp-us-central1")
	g.Expect(err).NotTo(HaveOccurred())
	for range 50 {
		g.Expect(BackupSchedule(c, "gcp-us-central1")).To(Equal(first))
	}
	// The seed is the cluster's namespace and name and the member: another database moves too.
	other := scheduleFor("H H(1-5) * * *")
	other.Name = "payments"
	spread := map[string]bool{first: true}
	for _, m := range []string{"gcp-us-central1", "aws-eu-west-1", "azure-westeurope"} {
		s, err := BackupSchedule(other, m)
		g.Expect(err).NotTo(HaveOccurred())
		spread[s] = true
	}
	g.Expect(len(spread)).To(BeNumerically(">", 1))
}

func TestBackupScheduleSpreadsMembers(t *testing.T) {
	g := NewWithT(t)
	c := scheduleFor("H 2 * * *") // demo/orders
	minutes := map[string]string{}
	for _, m := range []string{"aws-eu-west-1", "azure-westeurope", "gcp-us-central1"} {
		s, err := BackupSchedule(c, m)
		g.Expect(err).NotTo(HaveOccurred())
		minutes[m] = strings.Fields(s)[0]
	}
	distinct := map[string]bool{}
	for _, v := range minutes {
		distinct[v] = true
	}
	g.Expect(distinct).To(HaveLen(3), "the three members back up at different minutes: %v", minutes)

	distinct = map[string]bool{}
	hours := map[string]bool{}
	for i := range 100 {
		s, err := BackupSchedule(scheduleFor("H H * * *"), fmt.Sprintf("member-%03d", i))
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(s)
		distinct[f[0]] = true
		hours[f[1]] = true
	}
	// 100 draws from 60 values cover about 48 of them when the hash spreads well.
	g.Expect(len(distinct)).To(BeNumerically(">=", 40), "minutes over 100 members")
	g.Expect(len(hours)).To(BeNumerically(">=", 20), "hours over 100 members")
}

func TestCronJobMinuteDiffersPerMember(t *testing.T) {
	g := NewWithT(t)
	c := cluster(withBackup("H 2 * * *", s3Target("")))
	minutes := map[string]bool{}
	for _, m := range []placement.Member{awsMember, azureMember, gcpMember} {
		cj := mustRender(t, c, m).BackupCronJob
		want, err := BackupSchedule(c, m.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(*cj.Spec.Schedule).To(Equal(want))
		minutes[strings.Fields(*cj.Spec.Schedule)[0]] = true
	}
	g.Expect(minutes).To(HaveLen(3))
}
