//! Token accounting: the server's counts when it reports them, the Run's own otherwise.

use cursor_proto::agent::v1::TurnEndedUpdate;
use cursor_proto::ir::Usage;

/// What a leg cost, as far as the Run knows.
#[derive(Clone, Debug)]
pub(super) struct Tally {
    /// Output tokens counted from `token_delta`s this leg.
    pub(super) output_tokens: u64,
    /// The counts `turn_ended` reported, if it came.
    pub(super) server_usage: Option<TurnEndedUpdate>,
    /// The estimated prompt size: the conversation, then each tool result sent back.
    pub(super) input_estimate: u64,
}

impl Tally {
    pub(super) fn new(input_estimate: u64) -> Self {
        Self {
            output_tokens: 0,
            server_usage: None,
            input_estimate,
        }
    }

    #[inline]
    pub(super) fn on_tokens(&mut self, tokens: i32) {
        self.output_tokens += u64::try_from(tokens).unwrap_or(0);
    }

    /// A new leg starts: its output is counted afresh.
    pub(super) fn next_leg(&mut self) {
        self.output_tokens = 0;
        self.server_usage = None;
    }

    /// The leg's usage: the server's counts where it gave them, the estimate and the counted
    /// output otherwise.
    pub(super) fn usage(&self) -> Usage {
        let mut usage = Usage::default();
        let reported = self.server_usage.as_ref();
        let positive = |value: Option<i64>| value.and_then(|v| u64::try_from(v).ok());
        match reported.and_then(|u| positive(u.input_tokens)) {
            Some(input) => usage.input_tokens = input,
            None => {
                usage.input_tokens = self.input_estimate;
                usage.input_estimated = true;
            }
        }
        usage.output_tokens = reported
            .and_then(|u| positive(u.output_tokens))
            .unwrap_or(self.output_tokens);
        if let Some(reported) = reported {
            usage.cache_read_tokens = positive(reported.cache_read_tokens).unwrap_or(0);
            usage.cache_write_tokens = positive(reported.cache_write_tokens).unwrap_or(0);
            usage.reasoning_tokens = positive(reported.reasoning_tokens).unwrap_or(0);
        }
        usage
    }
}
