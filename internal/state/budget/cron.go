package budget

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// schedule is a parsed five-field cron schedule (minute hour day-of-month
// month day-of-week), in UTC.
type schedule struct {
	minute, hour, dom, month, dow uint64 // bit sets
	// domStar and dowStar record a "*" field: when both day fields are
	// restricted, a day matches either (cron's rule).
	domStar, dowStar bool
}

var macros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// fieldNames are the names a month or day-of-week field may use for its
// numbers (case does not matter), as standard cron allows.
var fieldNames = [5]map[string]int{
	3: {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12},
	4: {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6},
}

// parseSchedule reads a cron schedule: five fields of numbers (or, for
// month and day of week, names such as jan or mon-fri), ranges (a-b),
// steps (*/n, a-b/n), lists (a,b) and *, or a macro such as @daily.
func parseSchedule(spec string) (*schedule, error) {
	if m, ok := macros[strings.TrimSpace(spec)]; ok {
		spec = m
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("schedule %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", spec, len(fields))
	}
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	names := [5]string{"minute", "hour", "day of month", "month", "day of week"}
	var sets [5]uint64
	for i, f := range fields {
		set, err := parseField(f, bounds[i][0], bounds[i][1], fieldNames[i])
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %s %q: %w", spec, names[i], f, err)
		}
		sets[i] = set
	}
	if sets[4]&(1<<7) != 0 { // 7 is Sunday too
		sets[4] |= 1
	}
	return &schedule{minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: sets[4],
		domStar: fields[2] == "*", dowStar: fields[4] == "*"}, nil
}

func parseField(f string, lo, hi int, names map[string]int) (uint64, error) {
	number := func(text string) (int, error) {
		if n, ok := names[strings.ToLower(text)]; ok {
			return n, nil
		}
		n, err := strconv.Atoi(text)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", text)
		}
		return n, nil
	}
	var set uint64
	for _, part := range strings.Split(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("step %q is not a positive number", stepText)
			}
			step = n
		}
		first, last := lo, hi
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			x, err := number(a)
			if err != nil {
				return 0, err
			}
			first, last = x, x
			if isRange {
				if last, err = number(b); err != nil {
					return 0, err
				}
			} else if hasStep {
				last = hi
			}
		}
		if first < lo || last > hi || first > last {
			return 0, fmt.Errorf("%d-%d is outside %d-%d", first, last, lo, hi)
		}
		for v := first; v <= last; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

func (s *schedule) matches(t time.Time) bool {
	if s.minute&(1<<t.Minute()) == 0 || s.hour&(1<<t.Hour()) == 0 || s.month&(1<<int(t.Month())) == 0 {
		return false
	}
	dom, dow := s.dom&(1<<t.Day()) != 0, s.dow&(1<<int(t.Weekday())) != 0
	if !s.domStar && !s.dowStar {
		return dom || dow
	}
	return dom && dow
}

// activeAt reports whether a window of the given length that opens at
// each time the schedule names is open at now.
// activeOver is activeAt for each of the minutes from start (a whole
// minute, UTC), in one sweep: a minute is in a window when the schedule
// matched less than the window before it.
func (s *schedule) activeOver(start time.Time, minutes int, window time.Duration) []bool {
	out := make([]bool, minutes)
	var last time.Time
	for t := start.Add(-window); t.Before(start); t = t.Add(time.Minute) {
		if s.matches(t) {
			last = t
		}
	}
	for i := range out {
		t := start.Add(time.Duration(i) * time.Minute)
		if s.matches(t) {
			last = t
		}
		out[i] = !last.IsZero() && t.Sub(last) < window
	}
	return out
}

func (s *schedule) activeAt(now time.Time, window time.Duration) bool {
	now = now.UTC()
	for t := now.Truncate(time.Minute); now.Sub(t) < window; t = t.Add(-time.Minute) {
		if s.matches(t) {
			return true
		}
	}
	return false
}
