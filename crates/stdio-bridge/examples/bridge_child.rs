//! Bridge a child process: `bridge_child CMD ARGS…` is a stdio MCP server that runs `CMD ARGS…` and
//! forwards everything to it, keeping the client's session when the child exits and is started again.
//!
//! Give it to an editor as the server command, in front of the real one:
//!
//! ```text
//! cargo run --example bridge_child -- node server.js
//! ```

use calltape_stdio_bridge::{Bridge, ChildUpstream, stdio};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = std::env::args().skip(1).collect();
    let bridge = Bridge::builder()
        .upstream(ChildUpstream::new(command)?)
        .build()?;
    // stdout belongs to the protocol: the summary goes to stderr.
    let summary = bridge.run(stdio::stdin(), stdio::stdout()).await?;
    eprintln!(
        "the child was started {} times, its session replayed {} times",
        summary.connects, summary.reinitializations
    );
    Ok(())
}
