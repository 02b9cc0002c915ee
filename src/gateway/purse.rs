//! What a batch's gateway holds its calls to: the caps of `[budget]`,
//! checked before each call is sent on, against the batch's spend as the
//! gateway itself counts it — so a cap holds at the call that reaches it,
//! not a poll later. The day's and the campaign's caps also count what every
//! other run set spent, which the console's spend guard counts and hands the
//! driver ([`Others`], the run set's `.gateway-budget.json`).
//!
//! Once a cap is reached, each new call is refused ([`refusal`]); calls
//! already under way end and are counted, so the batch overshoots its cap
//! by at most what was in flight.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::campaign::Budget;
use crate::live::spend::{self, CapUse, SpendNow};

/// Spend in both measures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// In the campaign's currency; none when nothing of it was priced.
    pub cost: Option<f64>,
    pub tokens: u64,
}

impl Spent {
    pub fn add(&mut self, o: Spent) {
        self.tokens += o.tokens;
        if let Some(c) = o.cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }
}

/// What the other run sets of the campaign spent, as the console's spend
/// guard last counted them: today's (UTC `day`) and in all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Others {
    pub day: String,
    pub day_spent: Spent,
    pub campaign_spent: Spent,
}

/// A batch's caps and its spend, as its gateway holds them.
#[derive(Debug, Clone)]
pub struct Purse {
    budget: Budget,
    currency: String,
    /// The batch's spend in all: what it had counted when the gateway
    /// started (an earlier attempt's calls), and every call since.
    batch: Spent,
    /// The same by UTC day (the newest few days).
    days: BTreeMap<String, Spent>,
    others: Option<Others>,
}

/// Days of the batch's spend kept (today's is the one a cap reads).
const DAYS_KEPT: usize = 3;

impl Purse {
    /// `before`: the batch's spend when the gateway starts, in all and by day.
    pub fn new(budget: &Budget, currency: &str, before: Spent, before_by_day: BTreeMap<String, Spent>) -> Self {
        let mut p = Self {
            budget: budget.clone(),
            currency: currency.to_owned(),
            batch: before,
            days: before_by_day,
            others: None,
        };
        p.trim();
        p
    }

    /// Whether any cap on spend is set (else nothing is ever refused).
    pub fn caps_anything(&self) -> bool {
        self.budget.caps_spend()
    }

    pub fn set_others(&mut self, o: Others) {
        self.others = Some(o);
    }

    /// Counts one call, ended on UTC `day`.
    pub fn add(&mut self, s: Spent, day: &str) {
        self.batch.add(s);
        self.days.entry(day.to_owned()).or_default().add(s);
        self.trim();
    }

    fn trim(&mut self) {
        while self.days.len() > DAYS_KEPT {
            self.days.pop_first();
        }
    }

    /// The batch's spend in all, as counted.
    pub fn batch(&self) -> Spent {
        self.batch
    }

    /// Every cap against the spend now (today: UTC `today`), in the docs' order.
    pub fn caps(&self, today: &str) -> Vec<CapUse> {
        let mut day = self.days.get(today).copied().unwrap_or_default();
        let mut campaign = self.batch;
        if let Some(o) = &self.others {
            if o.day == today {
                day.add(o.day_spent);
            }
            campaign.add(o.campaign_spent);
        }
        let now = SpendNow {
            batch_tokens: self.batch.tokens,
            batch_cost: self.batch.cost,
            day_tokens: day.tokens,
            day_cost: day.cost,
            campaign_tokens: campaign.tokens,
            campaign_cost: campaign.cost,
        };
        spend::check_caps(&self.budget, &now, |x| crate::basics::numfmt::money(x, &self.currency))
    }

    /// The first cap reached now, if any: a new call is refused.
    pub fn reached(&self, today: &str) -> Option<CapUse> {
        if !self.caps_anything() {
            return None;
        }
        self.caps(today).into_iter().find(|c| c.reached)
    }
}

/// The status of the gateway's refusal: 402 Payment Required — a status
/// the OpenAI and Anthropic SDKs (and Inspect, and LiteLLM) do not retry,
/// sent with `x-should-retry: false`, which those SDKs obey whatever the
/// status.
pub const REFUSAL_STATUS: u16 = 402;

/// The body of the refusal of a call once `cap` is reached: an
/// OpenAI-style error (`error.message`, `type`, `code`) that names the cap
/// and the spend.
pub fn refusal(cap: &CapUse) -> serde_json::Value {
    serde_json::json!({
        "error": {
            "message": format!("runboard: budget reached — {}; this batch is being paused (raise [budget] {} in campaign.toml to resume it)", cap.words, cap.key),
            "type": "runboard_budget_reached",
            "code": "budget_reached",
            "cap": cap.key,
            "limit": cap.limit,
            "used": cap.used,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(toml: &str) -> Budget {
        toml::from_str(toml).unwrap()
    }

    fn usd(x: f64) -> Spent {
        Spent { cost: Some(x), tokens: (x * 100.0) as u64 }
    }

    #[test]
    fn the_batch_cap_holds_at_the_call_that_reaches_it_counting_earlier_attempts() {
        let b = budget("max_cost = 40.0");
        let mut p = Purse::new(&b, "USD", usd(30.0), BTreeMap::new());
        assert!(p.reached("2026-12-06").is_none());
        p.add(usd(9.5), "2026-12-06");
        assert!(p.reached("2026-12-06").is_none());
        p.add(usd(0.5), "2026-12-06");
        let cap = p.reached("2026-12-06").expect("40.00 of 40.00 spent");
        assert_eq!(cap.key, "max_cost");
        assert_eq!(cap.words, "the cap of 40.00 USD per batch: 40.00 USD spent");
        let body = refusal(&cap);
        assert_eq!(body["error"]["code"], "budget_reached");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(msg.contains("the cap of 40.00 USD per batch: 40.00 USD spent") && msg.contains("max_cost"), "{msg}");
        // Nothing capped: nothing refused, whatever is spent.
        let mut free = Purse::new(&Budget::default(), "USD", Spent::default(), BTreeMap::new());
        free.add(usd(1e9), "2026-12-06");
        assert!(free.reached("2026-12-06").is_none());
    }

    #[test]
    fn the_days_and_the_campaigns_caps_add_what_the_others_spent() {
        let b = budget("daily_max_cost = 100.0\ncampaign_max_tokens = 50000");
        let before_by_day = BTreeMap::from([("2026-12-05".to_owned(), usd(70.0))]);
        let mut p = Purse::new(&b, "USD", usd(70.0), before_by_day);
        // Yesterday's spend is not today's.
        p.add(usd(20.0), "2026-12-06");
        assert!(p.reached("2026-12-06").is_none());
        p.set_others(Others { day: "2026-12-06".into(), day_spent: usd(80.0), campaign_spent: Spent::default() });
        let cap = p.reached("2026-12-06").unwrap();
        assert_eq!((cap.key.as_str(), cap.used), ("daily_max_cost", 100.0));
        // The others' count of another day is not today's.
        p.set_others(Others { day: "2026-12-05".into(), day_spent: usd(80.0), campaign_spent: usd(410.0) });
        let cap = p.reached("2026-12-06").unwrap();
        assert_eq!((cap.key.as_str(), cap.used), ("campaign_max_tokens", 50000.0));
        // A model with no price: money caps see nothing, tokens caps do.
        let mut unpriced =
            Purse::new(&budget("max_cost = 1.0\nmax_tokens = 10"), "USD", Spent::default(), BTreeMap::new());
        unpriced.add(Spent { cost: None, tokens: 9 }, "2026-12-06");
        assert!(unpriced.reached("2026-12-06").is_none());
        unpriced.add(Spent { cost: None, tokens: 1 }, "2026-12-06");
        assert_eq!(unpriced.reached("2026-12-06").unwrap().key, "max_tokens");
    }
}
