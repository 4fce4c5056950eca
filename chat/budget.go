package chat

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/config"
)

// Price is what one model costs, in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Budget prices platform-paid replies and enforces each community's budget: at
// alert_threshold_pct it logs and sets a metric; over the daily or monthly limit it refuses
// platform-paid chats. Replies paid with the caller's own key, and the free scripted model,
// are not counted.
type Budget struct {
	Store  CostStore
	Prices map[string]Price // by model id ("anthropic/claude-haiku-4-5")
	Log    *slog.Logger
	// Spent is the share of each limit used, by community and period ("day", "month").
	Spent *prometheus.GaugeVec
}

// CostStore keeps each community's spending totals (store.Store implements it).
type CostStore interface {
	// AddCost adds usd to the community's totals for the current UTC day and month and returns
	// the new totals.
	AddCost(ctx context.Context, community string, usd float64) (day, month float64, err error)
	// Costs returns the community's totals for the current UTC day and month.
	Costs(ctx context.Context, community string) (day, month float64, err error)
}

// BudgetMetric is the gauge Budget.Spent expects; register it where the metrics live.
func BudgetMetric() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "assistant_budget_spent_ratio",
		Help: "Share of a community's budget spent by platform-paid replies, by period (day, month); 1 means the limit is reached.",
	}, []string{"community", "period"})
}

// msgBudgetFmt is the reader-facing refusal over a limit.
const msgBudgetFmt = "This assistant has used its %s budget for platform-paid answers. Try again later, or send your own API key."

// Refusal returns a *RefusalError (CodeBudget) when community c is over a limit, or nil. A
// budget that cannot be read refuses too.
func (b *Budget) Refusal(ctx context.Context, c *config.Community) error {
	if b == nil || c.Budget == nil {
		return nil
	}
	day, month, err := b.Store.Costs(ctx, c.ID)
	if err != nil {
		b.log().Error("reading the budget failed; refusing platform-paid replies until it can be read", slog.String("community", c.ID), slog.Any("error", err))
		return refuse(CodeBudget, fmt.Sprintf(msgBudgetFmt, "daily"))
	}
	switch {
	case day >= c.Budget.DailyLimitUSD:
		return refuse(CodeBudget, fmt.Sprintf(msgBudgetFmt, "daily"))
	case month >= c.Budget.MonthlyLimitUSD:
		return refuse(CodeBudget, fmt.Sprintf(msgBudgetFmt, "monthly"))
	}
	return nil
}

// Record adds the cost of one model call to the community's totals when the platform paid for
// it, and returns the call's estimated cost (nil when unknown).
func (b *Budget) Record(ctx context.Context, c *config.Community, r Route, u Usage) *float64 {
	if b == nil || r.Free {
		return nil
	}
	p, ok := b.Prices[r.Model]
	if !ok {
		return nil
	}
	cost := (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
	if r.BYOK || c.Budget == nil || cost == 0 {
		return &cost
	}
	day, month, err := b.Store.AddCost(ctx, c.ID, cost)
	if err != nil {
		b.log().Error("recording a reply's cost failed", slog.String("community", c.ID), slog.Any("error", err))
		return &cost
	}
	for _, p := range []struct {
		period       string
		spent, limit float64
	}{{"day", day, c.Budget.DailyLimitUSD}, {"month", month, c.Budget.MonthlyLimitUSD}} {
		ratio := p.spent / p.limit
		if b.Spent != nil {
			b.Spent.WithLabelValues(c.ID, p.period).Set(ratio)
		}
		if ratio*100 >= c.Budget.AlertThresholdPct {
			b.log().Warn("community budget alert", slog.String("community", c.ID), slog.String("period", p.period),
				slog.Float64("spent_usd", p.spent), slog.Float64("limit_usd", p.limit), slog.Float64("threshold_pct", c.Budget.AlertThresholdPct))
		}
	}
	return &cost
}

func (b *Budget) log() *slog.Logger {
	if b.Log != nil {
		return b.Log
	}
	return slog.New(slog.DiscardHandler)
}
