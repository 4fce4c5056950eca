package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads the five crontab fields; ParseCron adapts what it gets.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// ParseCron reads a sync.<type>.cron line as knowledge.md §6.1 gives it: the standard five
// fields (*, lists, ranges, steps, month and day names), in UTC whatever the host's zone, 0 and
// 7 both Sunday, and, when both day fields are restricted, a day matching either fires. The
// scheduler and the config check use it, so what loads is what runs.
//
// It is robfig/cron's standard parser with two adaptations: robfig's day of week stops at 6,
// so an item naming 7 is rewritten as the days it means before parsing; and robfig would
// take a CRON_TZ= or TZ= prefix, which is refused since schedules run in UTC. Robfig already
// fires on either day field when neither is "*" (a step such as "*/2" counts as restricted).
func ParseCron(spec string) (*cron.SpecSchedule, error) {
	fields := strings.Fields(spec)
	if len(fields) > 0 && (strings.HasPrefix(fields[0], "TZ=") || strings.HasPrefix(fields[0], "CRON_TZ=")) {
		return nil, errors.New("a time zone is not allowed: schedules run in UTC")
	}
	if len(fields) == 5 {
		fields[4] = sundaySeven(fields[4])
		spec = strings.Join(fields, " ")
	}
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok { // the parser returns a SpecSchedule for every five-field line
		return nil, fmt.Errorf("unexpected schedule type %T", s)
	}
	ss.Location = time.UTC
	return ss, nil
}

// sundaySeven rewrites the items of a day-of-week field that name 7 (Sunday, as in Vixie
// cron) as the explicit days they cover, 7 counted as 0: "5-7" becomes "0,5,6". Items without
// a 7, and any it cannot read, are left for the parser (and its error text).
func sundaySeven(field string) string {
	items := strings.Split(field, ",")
	for i, item := range items {
		rng, step, hasStep := strings.Cut(item, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		if lo != "7" && hi != "7" {
			continue
		}
		a, errA := weekday(lo)
		b := a
		var errB error
		switch {
		case isRange:
			b, errB = weekday(hi)
		case hasStep:
			b = 7 // "N/step" runs from N to the end
		}
		n := 1
		var errS error
		if hasStep {
			n, errS = strconv.Atoi(step)
		}
		if errA != nil || errB != nil || errS != nil || a < 0 || b > 7 || a > b || n < 1 {
			continue
		}
		var days []int
		for d := a; d <= b; d += n {
			day := d % 7
			if !slices.Contains(days, day) {
				days = append(days, day)
			}
		}
		slices.Sort(days)
		out := make([]string, len(days))
		for j, d := range days {
			out[j] = strconv.Itoa(d)
		}
		items[i] = strings.Join(out, ",")
	}
	return strings.Join(items, ",")
}

var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// weekday reads a day of the week as a number (0–7) or a name, as the parser does.
func weekday(s string) (int, error) {
	if i := slices.Index(dayNames, strings.ToLower(s)); i >= 0 {
		return i, nil
	}
	return strconv.Atoi(s)
}
