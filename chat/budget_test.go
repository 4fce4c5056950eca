package chat

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/config"
)

// fakeCosts is a CostStore in memory; err fails every call.
type fakeCosts struct {
	day, month float64
	added      []float64
	err        error
}

func (f *fakeCosts) AddCost(_ context.Context, _ string, usd float64) (float64, float64, error) {
	if f.err != nil {
		return 0, 0, f.err
	}
	f.added = append(f.added, usd)
	f.day += usd
	f.month += usd
	return f.day, f.month, nil
}

func (f *fakeCosts) Costs(context.Context, string) (float64, float64, error) {
	return f.day, f.month, f.err
}

func budgetCommunity() *config.Community {
	return &config.Community{ID: "hed", Budget: &config.Budget{DailyLimitUSD: 1, MonthlyLimitUSD: 10, AlertThresholdPct: 80}}
}

// TestBudgetRefusal: platform-paid replies are refused at the daily or the monthly limit, and
// while the totals cannot be read.
func TestBudgetRefusal(t *testing.T) {
	cases := []struct {
		name       string
		costs      fakeCosts
		noBudget   bool
		wantPeriod string // "" for no refusal
	}{
		{name: "under both limits", costs: fakeCosts{day: 0.99, month: 9.99}},
		{name: "at the daily limit", costs: fakeCosts{day: 1, month: 1}, wantPeriod: "daily"},
		{name: "at the monthly limit", costs: fakeCosts{day: 0.5, month: 10}, wantPeriod: "monthly"},
		{name: "over both", costs: fakeCosts{day: 3, month: 30}, wantPeriod: "daily"},
		{name: "totals unreadable", costs: fakeCosts{err: errors.New("redis down")}, wantPeriod: "daily"},
		{name: "no budget configured", costs: fakeCosts{day: 100, month: 100}, noBudget: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := budgetCommunity()
			if tc.noBudget {
				c.Budget = nil
			}
			b := &Budget{Store: &tc.costs}
			err := b.Refusal(context.Background(), c)
			if tc.wantPeriod == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := "This assistant has used its " + tc.wantPeriod + " budget for platform-paid answers. Try again later, or send your own API key."
			if ref := refusalOf(err); ref == nil || ref.Code != CodeBudget || ref.Msg != want {
				t.Errorf("Refusal = %v, want %q", err, want)
			}
		})
	}
	var nilBudget *Budget
	if err := nilBudget.Refusal(context.Background(), budgetCommunity()); err != nil {
		t.Errorf("a nil Budget refused: %v", err)
	}
}

// TestBudgetRecord: a call is priced from its usage; only platform-paid calls count against
// the budget, and the spent share is set on the gauge.
func TestBudgetRecord(t *testing.T) {
	prices := map[string]Price{"anthropic/claude-haiku-4-5": {InputPerMTok: 1, OutputPerMTok: 5}}
	usage := Usage{InputTokens: 100_000, OutputTokens: 20_000} // 0.1 + 0.1 USD
	paid := Route{Model: "anthropic/claude-haiku-4-5"}
	cases := []struct {
		name     string
		route    Route
		noBudget bool
		wantCost float64 // NaN: no cost
		recorded bool
	}{
		{name: "platform paid", route: paid, wantCost: 0.2, recorded: true},
		{name: "the reader's key", route: Route{Model: paid.Model, BYOK: true}, wantCost: 0.2},
		{name: "no budget configured", route: paid, noBudget: true, wantCost: 0.2},
		{name: "scripted is free", route: Route{Model: DefaultScripted, Free: true}, wantCost: math.NaN()},
		{name: "no price known", route: Route{Model: "openai/local"}, wantCost: math.NaN()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			costs := &fakeCosts{day: 0.7, month: 0.7}
			b := &Budget{Store: costs, Prices: prices, Spent: BudgetMetric()}
			c := budgetCommunity()
			if tc.noBudget {
				c.Budget = nil
			}
			got := b.Record(context.Background(), c, tc.route, usage)
			switch {
			case math.IsNaN(tc.wantCost):
				if got != nil {
					t.Errorf("cost %v, want none", *got)
				}
			case got == nil || math.Abs(*got-tc.wantCost) > 1e-12:
				t.Errorf("cost %v, want %v", got, tc.wantCost)
			}
			if recorded := len(costs.added) == 1; recorded != tc.recorded {
				t.Fatalf("recorded %v, want %v", costs.added, tc.recorded)
			}
			if tc.recorded {
				ratios := spentRatios(t, b.Spent)
				if math.Abs(ratios["hed/day"]-0.9) > 1e-9 || math.Abs(ratios["hed/month"]-0.09) > 1e-9 {
					t.Errorf("spent ratios %v, want day 0.9, month 0.09", ratios)
				}
			}
		})
	}
	var nilBudget *Budget
	if got := nilBudget.Record(context.Background(), budgetCommunity(), paid, usage); got != nil {
		t.Errorf("a nil Budget priced a call: %v", *got)
	}
}

// spentRatios reads the budget gauge: community/period → value.
func spentRatios(t *testing.T, g *prometheus.GaugeVec) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["community"]+"/"+labels["period"]] = m.GetGauge().GetValue()
		}
	}
	return out
}
