package config

import (
	"strings"
	"testing"
	"time"
)

// TestParseCron checks the schedule semantics knowledge.md §6.1 asks of every sync.<type>.cron:
// UTC, 0 and 7 both Sunday, names, either day field firing when both are restricted.
func TestParseCron(t *testing.T) {
	// 2025-06-02 is a Monday.
	from := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		spec string
		want []string // the next fires after from, in UTC
	}{
		{"0 3 * * *", []string{"2025-06-02T03:00", "2025-06-03T03:00"}},
		{"0 3 * * 0", []string{"2025-06-08T03:00", "2025-06-15T03:00"}},
		{"0 3 * * 7", []string{"2025-06-08T03:00", "2025-06-15T03:00"}},
		{"0 3 * * sun", []string{"2025-06-08T03:00"}},
		{"0 3 * * 5-7", []string{"2025-06-06T03:00", "2025-06-07T03:00", "2025-06-08T03:00", "2025-06-13T03:00"}},
		{"0 3 * * fri-7", []string{"2025-06-06T03:00", "2025-06-07T03:00", "2025-06-08T03:00"}},
		{"0 3 * * 1,7", []string{"2025-06-02T03:00", "2025-06-08T03:00", "2025-06-09T03:00"}},
		{"0 3 * * 3-7/2", []string{"2025-06-04T03:00", "2025-06-06T03:00", "2025-06-08T03:00", "2025-06-11T03:00"}},
		{"30 4 * * 1", []string{"2025-06-02T04:30", "2025-06-09T04:30"}},
		// Both day fields restricted: the 15th or a Sunday.
		{"0 0 15 * 0", []string{"2025-06-08T00:00", "2025-06-15T00:00", "2025-06-22T00:00", "2025-06-29T00:00", "2025-07-06T00:00", "2025-07-13T00:00", "2025-07-15T00:00"}},
		// A day of month with "*" weekdays: only the 15th.
		{"0 0 15 * *", []string{"2025-06-15T00:00", "2025-07-15T00:00"}},
		{"*/20 1 * jun mon", []string{"2025-06-02T01:00", "2025-06-02T01:20", "2025-06-02T01:40", "2025-06-09T01:00"}},
	}
	for _, tt := range tests {
		s, err := ParseCron(tt.spec)
		if err != nil {
			t.Errorf("ParseCron(%q): %v", tt.spec, err)
			continue
		}
		at := from
		for i, want := range tt.want {
			at = s.Next(at)
			if got := at.UTC().Format("2006-01-02T15:04"); got != want {
				t.Errorf("ParseCron(%q): fire %d = %s, want %s", tt.spec, i+1, got, want)
				break
			}
		}
	}
}

// TestParseCronUTC: the host's zone does not move a schedule.
func TestParseCronUTC(t *testing.T) {
	old := time.Local
	time.Local = time.FixedZone("UTC+5", 5*3600)
	defer func() { time.Local = old }()
	s, err := ParseCron("0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	next := s.Next(time.Date(2025, 6, 2, 0, 0, 0, 0, time.Local))
	if want := time.Date(2025, 6, 2, 3, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next fire %v, want %v", next.UTC(), want)
	}
}

func TestParseCronErrors(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"every day", "expected exactly 5 fields, found 2"},
		{"0 3 * * * *", "expected exactly 5 fields, found 6"},
		{"0 3 * * 8", "above maximum (6)"},
		{"0 3 * * 7-8", "above maximum (6)"},
		{"CRON_TZ=Europe/Paris 0 3 * * *", "schedules run in UTC"},
		{"TZ=UTC 0 3 * * *", "schedules run in UTC"},
		{"0 24 * * *", "above maximum (23)"},
	} {
		_, err := ParseCron(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCron(%q) = %v, want an error containing %q", tt.spec, err, tt.want)
		}
	}
}
