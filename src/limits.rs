//! The limits every surface shares (the CLI, the API under `serve` and
//! `serve --root`, MCP over stdio), so a request refused by one is refused
//! by all.

/// The largest request: an API body, an MCP message line. 1 MiB is room
/// for a batch of facts hundreds of times longer than an agent writes.
pub const MAX_BODY: usize = 1 << 20;

/// The most text one `add` may append, over all its facts: what fits in
/// one [`MAX_BODY`], whichever surface it came through.
pub const MAX_FACT_BYTES: usize = MAX_BODY;
